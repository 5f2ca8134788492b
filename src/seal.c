/*
 * seal.c - AES-256-GCM sealing through libcrypto's EVP interface.
 * Implements: bf_seal_new, bf_seal_free, bf_seal_nonce, bf_seal_encrypt,
 * bf_seal_decrypt, bf_seal_kcv (seal.h), with libcrypto or as stubs that
 * say BF_ENOCODEC.
 *
 * Invariants: the key lives only in this struct (and in libcrypto's
 * expanded key schedules inside the contexts), and is wiped at free; one
 * context encrypts and one decrypts, each keyed once at creation, so a
 * seal or an open only sets the nonce. Every nonce this sealer gives is
 * new: prefix || counter, the prefix moving on when the counter wraps.
 * The contexts are libcrypto's allocations, not the space's allocator's
 * (libcrypto takes allocator hooks only process-wide): about 1 KiB each.
 */
#include "seal.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "le.h"

#ifdef BF_HAVE_CRYPTO
#include <errno.h>
#include <openssl/evp.h>
#include <sys/random.h>

struct bf_seal {
    EVP_CIPHER_CTX *enc, *dec;
    unsigned char key[BF_KEY_BYTES];
    unsigned char kcv[BF_KCV_BYTES];
    uint64_t prefix;
    uint32_t counter;
};

/* `len` bytes from the system's random source; 0 on success, else errno. */
static int random_bytes(void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = getrandom((char *)buf + done, len - done, 0);
        if (n < 0 && errno != EINTR)
            return errno;
        done += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

static int key_ctx(EVP_CIPHER_CTX **ctx, const unsigned char *key, int enc)
{
    *ctx = EVP_CIPHER_CTX_new();
    return *ctx != NULL && EVP_CipherInit_ex(*ctx, EVP_aes_256_gcm(), NULL, key, NULL, enc) == 1;
}

/* The key check value: AES-256-ECB of a zero block. */
static int check_value(const unsigned char *key, unsigned char *kcv)
{
    static const unsigned char zero[16];
    unsigned char out[32];
    int n = 0, ok = 0;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (c != NULL && EVP_EncryptInit_ex(c, EVP_aes_256_ecb(), NULL, key, NULL) == 1 &&
        EVP_CIPHER_CTX_set_padding(c, 0) == 1 && EVP_EncryptUpdate(c, out, &n, zero, 16) == 1 &&
        n == 16) {
        memcpy(kcv, out, BF_KCV_BYTES);
        ok = 1;
    }
    EVP_CIPHER_CTX_free(c);
    return ok;
}

int bf_seal_new(const bf_allocator *a, const unsigned char *key, bf_seal **out, char *why,
                size_t len)
{
    *out = NULL;
    bf_seal *s = bf_calloc(a, 1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, len, "out of memory for the sealer");
        return BF_ENOMEM;
    }
    int e = key != NULL ? 0 : random_bytes(s->key, sizeof(s->key));
    if (e == 0)
        e = random_bytes(&s->prefix, sizeof(s->prefix));
    if (e != 0) {
        bf_seal_free(a, s);
        snprintf(why, len, "no random bytes for the key and nonces: %s", strerror(e));
        return BF_EIO;
    }
    if (key != NULL)
        memcpy(s->key, key, sizeof(s->key));
    if (!key_ctx(&s->enc, s->key, 1) || !key_ctx(&s->dec, s->key, 0) ||
        !check_value(s->key, s->kcv)) {
        bf_seal_free(a, s);
        snprintf(why, len, "libcrypto could not set up AES-256-GCM");
        return BF_ENOMEM;
    }
    *out = s;
    return BF_OK;
}

int bf_seal_clone(const bf_allocator *a, const bf_seal *s, bf_seal **out, char *why, size_t len)
{
    return bf_seal_new(a, s->key, out, why, len);
}

void bf_seal_free(const bf_allocator *a, bf_seal *s)
{
    if (s == NULL)
        return;
    EVP_CIPHER_CTX_free(s->enc);
    EVP_CIPHER_CTX_free(s->dec);
    explicit_bzero(s->key, sizeof(s->key));
    bf_free(a, s);
}

void bf_seal_nonce(bf_seal *s, unsigned char *nonce)
{
    bf_put64(nonce, s->prefix);
    bf_put32(nonce + 8, s->counter);
    if (++s->counter == 0)
        s->prefix++;
}

int bf_seal_encrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    unsigned char *tag)
{
    int n;
    int ok = EVP_EncryptInit_ex(s->enc, NULL, NULL, NULL, nonce) == 1 &&
             EVP_EncryptUpdate(s->enc, NULL, &n, aad, (int)aad_len) == 1 &&
             (len == 0 || EVP_EncryptUpdate(s->enc, out, &n, in, (int)len) == 1) &&
             EVP_EncryptFinal_ex(s->enc, len > 0 ? out + len : out, &n) == 1 &&
             EVP_CIPHER_CTX_ctrl(s->enc, EVP_CTRL_GCM_GET_TAG, BF_TAG_BYTES, tag) == 1;
    return ok ? BF_OK : BF_ECODEC;
}

int bf_seal_decrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    const unsigned char *tag)
{
    int n;
    int ok = EVP_DecryptInit_ex(s->dec, NULL, NULL, NULL, nonce) == 1 &&
             EVP_DecryptUpdate(s->dec, NULL, &n, aad, (int)aad_len) == 1 &&
             (len == 0 || EVP_DecryptUpdate(s->dec, out, &n, in, (int)len) == 1) &&
             EVP_CIPHER_CTX_ctrl(s->dec, EVP_CTRL_GCM_SET_TAG, BF_TAG_BYTES, (void *)tag) == 1 &&
             EVP_DecryptFinal_ex(s->dec, len > 0 ? out + len : out, &n) == 1;
    return ok ? BF_OK : BF_ECORRUPT;
}

const unsigned char *bf_seal_kcv(const bf_seal *s)
{
    return s->kcv;
}

#else /* built without libcrypto: no space can ask for sealing */

int bf_seal_new(const bf_allocator *a, const unsigned char *key, bf_seal **out, char *why,
                size_t len)
{
    (void)a;
    (void)key;
    *out = NULL;
    snprintf(why, len, "encryption was not built into this library (no libcrypto)");
    return BF_ENOCODEC;
}

int bf_seal_clone(const bf_allocator *a, const bf_seal *s, bf_seal **out, char *why, size_t len)
{
    (void)a;
    (void)s;
    *out = NULL;
    snprintf(why, len, "encryption was not built into this library (no libcrypto)");
    return BF_ENOCODEC;
}

void bf_seal_free(const bf_allocator *a, bf_seal *s)
{
    (void)a;
    (void)s;
}

/* No sealer exists in such a library: what follows is never reached. */
void bf_seal_nonce(bf_seal *s, unsigned char *nonce)
{
    (void)s;
    memset(nonce, 0, BF_NONCE_BYTES);
}

int bf_seal_encrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    unsigned char *tag)
{
    (void)s, (void)nonce, (void)aad, (void)aad_len, (void)in, (void)len, (void)out, (void)tag;
    return BF_ENOCODEC;
}

int bf_seal_decrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    const unsigned char *tag)
{
    (void)s, (void)nonce, (void)aad, (void)aad_len, (void)in, (void)len, (void)out, (void)tag;
    return BF_ENOCODEC;
}

const unsigned char *bf_seal_kcv(const bf_seal *s)
{
    (void)s;
    return NULL;
}

#endif
