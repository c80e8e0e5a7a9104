/* moeperm: CANN's umbrella header. */
#ifndef MOEPERM_ACL_ACL_H_
#define MOEPERM_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif /* MOEPERM_ACL_ACL_H_ */
