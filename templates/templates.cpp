#include "templates/templates.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>

namespace kiln {

const std::string& template_tree_hash() {
  static const std::string kHash = [] {
    std::vector<EmbeddedTemplate> t = embedded_templates();
    std::sort(t.begin(), t.end(), [](auto& x, auto& y) { return std::string_view(x.name) < y.name; });
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    for (const auto& e : t) {
      // length-prefixed name and contents, so boundaries cannot shift
      std::string_view n(e.name), c(e.contents);
      uint64_t ln = n.size(), lc = c.size();
      EVP_DigestUpdate(ctx, &ln, sizeof(ln));
      EVP_DigestUpdate(ctx, n.data(), n.size());
      EVP_DigestUpdate(ctx, &lc, sizeof(lc));
      EVP_DigestUpdate(ctx, c.data(), c.size());
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (unsigned i = 0; i < len; ++i) {
      hex.push_back(kHex[md[i] >> 4]);
      hex.push_back(kHex[md[i] & 15]);
    }
    return hex;
  }();
  return kHash;
}

}  // namespace kiln
