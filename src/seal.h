/*
 * seal.h - authenticated encryption of extents and indexes: AES-256-GCM
 * through OpenSSL's libcrypto (which uses AES-NI and carry-less multiply
 * where the CPU has them).
 *
 * A sealer belongs to a space, as codec contexts do: its cipher contexts,
 * its key (copied, never written anywhere) and its nonce source. Nonces
 * are a random 64-bit prefix drawn when the sealer is made and a 32-bit
 * counter after it; when the counter wraps the prefix moves on by one. So
 * a sealer never gives a nonce twice, and sealers that share a key (spaces
 * of processes that open each other's files) collide only if two random
 * prefixes do, which for a million sealers under one key is a chance
 * below 3e-8. docs/format.md says what is sealed and what a reader of the
 * disk can still learn.
 */
#ifndef BF_SEAL_H
#define BF_SEAL_H

#include <stddef.h>

#include "buffile.h"

#define BF_NONCE_BYTES 12u
#define BF_TAG_BYTES 16u
/* What sealing adds to a payload: its nonce before it, its tag after it. */
#define BF_SEAL_BYTES (BF_NONCE_BYTES + BF_TAG_BYTES)
/* Bytes of a key's check value: AES-256 of a zero block under the key, cut to 8. */
#define BF_KCV_BYTES 8u

typedef struct bf_seal bf_seal;

/*
 * Make a sealer for the 32-byte `key` (copied), or for a key drawn from
 * the system's random source when `key` is NULL. Returns BF_OK, BF_ENOMEM,
 * BF_EIO (no random bytes), or BF_ENOCODEC when the library was built
 * without libcrypto; `why` says which.
 */
int bf_seal_new(const bf_allocator *a, const unsigned char *key, bf_seal **out, char *why,
                size_t len);

/*
 * A sealer of the same key as `s` with cipher contexts and a nonce prefix
 * of its own (drawn at random, as bf_seal_new draws one): what a worker
 * seals with, since a sealer is used by one thread at a time. As
 * bf_seal_new.
 */
int bf_seal_clone(const bf_allocator *a, const bf_seal *s, bf_seal **out, char *why, size_t len);

/* Free a sealer (NULL is a no-op); its key is wiped first. */
void bf_seal_free(const bf_allocator *a, bf_seal *s);

/* A nonce this sealer never gave before. */
void bf_seal_nonce(bf_seal *s, unsigned char *nonce);

/*
 * Encrypt `len` bytes of `in` into `out` (`in` == `out` is allowed) under
 * `nonce`, authenticating `aad` too; the 16-byte tag goes to `tag`.
 * Returns BF_OK or BF_ECODEC (libcrypto failed).
 */
int bf_seal_encrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    unsigned char *tag);

/*
 * Decrypt `len` bytes of `in` into `out` and check `tag` over them and
 * `aad`. Returns BF_OK, or BF_ECORRUPT when the tag does not hold: the
 * bytes, their header or their place were altered, or another key sealed
 * them. `out` is undefined then.
 */
int bf_seal_decrypt(bf_seal *s, const unsigned char *nonce, const unsigned char *aad,
                    size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
                    const unsigned char *tag);

/* The key's check value (BF_KCV_BYTES): what tells "another key" from "altered". */
const unsigned char *bf_seal_kcv(const bf_seal *s);

#endif
