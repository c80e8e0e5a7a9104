// Every out-of-line function that include/moeperm/moeperm.hpp declares must be exported from
// the shared library (it is built with hidden visibility; only MOEPERM_API and
// ACL_FUNC_VISIBILITY symbols are visible). A function that is declared but not exported
// compiles in a user's code and then fails to link, so this is checked at run time with
// dlsym instead of by calling the functions (which would break this test's own link).
// Names are Itanium-ABI mangled (GCC and Clang).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

struct Symbol {
  const char *declaration;
  const char *mangled;
};

const Symbol kCxxApi[] = {
    {"TensorDesc::contiguous(DType, std::vector<int64_t>)",
     "_ZN7moeperm10TensorDesc10contiguousENS_5DTypeESt6vectorIlSaIlEE"},
    {"element_size(DType)", "_ZN7moeperm12element_sizeENS_5DTypeE"},
    {"to_string(DType)", "_ZN7moeperm9to_stringENS_5DTypeE"},
    {"to_string(Code)", "_ZN7moeperm9to_stringENS_4CodeE"},
    {"Error::Error(Code, const std::string &)",
     "_ZN7moeperm5ErrorC1ENS_4CodeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"},
    {"plan_permute(const PermuteDesc &, const PlanOptions &)",
     "_ZN7moeperm12plan_permuteERKNS_11PermuteDescERKNS_11PlanOptionsE"},
    {"plan_permute_grad(const PermuteGradDesc &, const PlanOptions &)",
     "_ZN7moeperm17plan_permute_gradERKNS_15PermuteGradDescERKNS_11PlanOptionsE"},
    {"run(const Plan &, const PermuteData &, std::span<std::byte>)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_11PermuteDataESt4spanISt4byteLm18446744073709551615EE"},
    {"run(const Plan &, const PermuteGradData &, std::span<std::byte>)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_15PermuteGradDataESt4spanISt4byteLm18446744073709551615EE"},
    {"permute(const PermuteDesc &, const PermuteData &, const PlanOptions &)",
     "_ZN7moeperm7permuteERKNS_11PermuteDescERKNS_11PermuteDataERKNS_11PlanOptionsE"},
    {"permute_grad(const PermuteGradDesc &, const PermuteGradData &, const PlanOptions &)",
     "_ZN7moeperm12permute_gradERKNS_15PermuteGradDescERKNS_15PermuteGradDataERKNS_"
     "11PlanOptionsE"},
    {"infer_outputs(const UnpermuteDesc&)", "_ZN7moeperm13infer_outputsERKNS_13UnpermuteDescE"},
    {"infer_outputs(const UnpermuteGradDesc&)",
     "_ZN7moeperm13infer_outputsERKNS_17UnpermuteGradDescE"},
    {"plan_unpermute", "_ZN7moeperm14plan_unpermuteERKNS_13UnpermuteDescERKNS_11PlanOptionsE"},
    {"plan_unpermute_grad",
     "_ZN7moeperm19plan_unpermute_gradERKNS_17UnpermuteGradDescERKNS_11PlanOptionsE"},
    {"run(Plan, UnpermuteData, span)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_13UnpermuteDataESt4spanISt4byteLm18446744073709551615EE"},
    {"run(Plan, UnpermuteData, span, stream)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_13UnpermuteDataESt4spanISt4byteLm18446744073709551615EEPv"},
    {"run(Plan, UnpermuteGradData, span)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_17UnpermuteGradDataESt4spanISt4byteLm18446744073709551615EE"},
    {"run(Plan, UnpermuteGradData, span, stream)",
     "_ZN7moeperm3runERKNS_4PlanERKNS_17UnpermuteGradDataESt4spanISt4byteLm18446744073709551615E"
     "EPv"},
    {"run_async(Plan, UnpermuteData, ...)",
     "_ZN7moeperm9run_asyncERKNS_4PlanERKNS_13UnpermuteDataESt4spanISt4byteLm18446744073709551615E"
     "EPvPFvS9_NS_4CodeEPKcES9_"},
    {"run_async(Plan, UnpermuteGradData, ...)",
     "_ZN7moeperm9run_asyncERKNS_4PlanERKNS_17UnpermuteGradDataESt4spanISt4byteLm18446744073709551"
     "615EEPvPFvS9_NS_4CodeEPKcES9_"},
    {"unpermute(desc, data, options)",
     "_ZN7moeperm9unpermuteERKNS_13UnpermuteDescERKNS_13UnpermuteDataERKNS_11PlanOptionsE"},
    {"unpermute_grad(desc, data, options)",
     "_ZN7moeperm14unpermute_gradERKNS_17UnpermuteGradDescERKNS_17UnpermuteGradDataERKNS_11PlanOpt"
     "ionsE"},
    {"set_num_threads(int)", "_ZN7moeperm15set_num_threadsEi"},
    {"get_num_threads()", "_ZN7moeperm15get_num_threadsEv"},
    {"Plan::workspace_bytes() const", "_ZNK7moeperm4Plan15workspace_bytesEv"},
    {"Plan::sizes() const", "_ZNK7moeperm4Plan5sizesEv"},
    {"Plan::drop_and_pad() const", "_ZNK7moeperm4Plan12drop_and_padEv"},
    {"Plan::is_grad() const", "_ZNK7moeperm4Plan7is_gradEv"},
    {"Plan::backend_name() const", "_ZNK7moeperm4Plan12backend_nameEv"},
    {"Plan::variant() const", "_ZNK7moeperm4Plan7variantEv"},
    {"Plan::to_string() const", "_ZNK7moeperm4Plan9to_stringB5cxx11Ev"},
};

const char *const kCApi[] = {
    "aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize",
    "aclnnMoeTokenPermuteWithRoutingMap",
    "aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize",
    "aclnnMoeTokenPermuteWithRoutingMapGrad",
    "aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize",
    "aclnnMoeTokenUnpermuteWithRoutingMap",
    "aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize",
    "aclnnMoeTokenUnpermuteWithRoutingMapGrad",
    "aclCreateTensor",
    "aclDestroyTensor",
    "aclCreateIntArray",
    "aclDestroyIntArray",
    "aclGetRecentErrMsg",
    "aclDataTypeSize",
    "aclInit",
    "aclFinalize",
    "aclrtSetDevice",
    "aclrtResetDevice",
    "aclrtGetDeviceCount",
    "aclrtCreateContext",
    "aclrtDestroyContext",
    "aclrtSetCurrentContext",
    "aclrtCreateStream",
    "aclrtDestroyStream",
    "aclrtSynchronizeStream",
    "aclrtSynchronizeDevice",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMallocHost",
    "aclrtFreeHost",
    "aclrtMemcpy",
    "aclrtMemset",
};

class PublicSymbols : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef MOEPERM_STATIC_LIBRARY
    GTEST_SKIP() << "libmoeperm is static: visibility does not apply";
#else
    handle_ = dlopen(MOEPERM_LIBRARY_FILE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
#endif
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
  }
  void *handle_ = nullptr;
};

TEST_F(PublicSymbols, EveryDeclaredCxxFunctionIsExported) {
  std::string missing;
  for (const Symbol &s : kCxxApi)
    if (!dlsym(handle_, s.mangled)) missing += std::string("\n  moeperm::") + s.declaration;
  EXPECT_TRUE(missing.empty()) << "declared in moeperm.hpp but not exported:" << missing;
}

TEST_F(PublicSymbols, EveryCannFunctionIsExported) {
  std::string missing;
  for (const char *name : kCApi)
    if (!dlsym(handle_, name)) missing += std::string("\n  ") + name;
  EXPECT_TRUE(missing.empty()) << "not exported:" << missing;
}

}  // namespace
