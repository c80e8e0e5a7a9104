#include <moeperm/moeperm.hpp>

namespace moeperm {

const char *to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    case DType::u8: return "uint8";
    case DType::i64: return "int64";
    case DType::f64: return "float64";
    case DType::boolean: return "bool";
    case DType::bf16: return "bfloat16";
  }
  return "unknown dtype";
}

int64_t element_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::i8: return 1;
    case DType::i32: return 4;
    case DType::u8: return 1;
    case DType::i64: return 8;
    case DType::f64: return 8;
    case DType::boolean: return 1;
    case DType::bf16: return 2;
  }
  return 0;
}

const char *to_string(Code code) noexcept {
  switch (code) {
    case Code::ok: return "ACLNN_SUCCESS";
    case Code::null_pointer: return "ACLNN_ERR_PARAM_NULLPTR";
    case Code::invalid_param: return "ACLNN_ERR_PARAM_INVALID";
    case Code::runtime_error: return "ACLNN_ERR_RUNTIME_ERROR";
    case Code::tiling_error: return "ACLNN_ERR_INNER_TILING_ERROR";
    case Code::inner_nullptr: return "ACLNN_ERR_INNER_NULLPTR";
  }
  return "unknown status";
}

Error::Error(Code code, const std::string &message) : std::runtime_error(message), code_(code) {}

}  // namespace moeperm
