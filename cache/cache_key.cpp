#include "cache/cache_key.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace kiln {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

std::string to_hex(const unsigned char* bytes, unsigned len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(kHex[bytes[i] >> 4]);
    hex.push_back(kHex[bytes[i] & 15]);
  }
  return hex;
}

// Incremental SHA-256 whose every field is prefixed with its length as 8 little-endian bytes, so
// ("ab", "c") and ("a", "bc") hash differently and the key does not depend on host endianness.
class FieldHasher {
 public:
  FieldHasher() : ctx_(EVP_MD_CTX_new()) {
    // EVP_sha256 is built into libcrypto; initialisation fails only on allocation failure, and then
    // the finished digest is empty, which no stored key can equal.
    ok_ = ctx_ != nullptr && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1;
  }
  void field(std::string_view bytes) {
    unsigned char len[8];
    uint64_t n = bytes.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    update(len, sizeof(len));
    update(bytes.data(), bytes.size());
  }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!ok_ || EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1) return {};
    return to_hex(md, len);
  }

 private:
  void update(const void* data, size_t size) {
    if (ok_ && size > 0) ok_ = EVP_DigestUpdate(ctx_.get(), data, size) == 1;
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx_;
  bool ok_ = false;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
  return to_hex(md, len);
}

std::string kernel_cache_key(const KeyInputs& in) {
  std::vector<std::string> options = in.options;
  std::sort(options.begin(), options.end());

  FieldHasher h;
  h.field("kiln-kernel-key-v1");  // domain tag: keys of other tables can never collide with these
  h.field(std::to_string(in.codegen_version));
  h.field(in.template_hash);
  h.field(in.source);
  h.field(in.nvrtc_version);
  h.field(std::to_string(options.size()));
  for (const std::string& o : options) h.field(o);
  h.field(in.arch);
  return h.hex();
}

}  // namespace kiln
