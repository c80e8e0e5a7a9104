#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harness (tests/fuzz/corpus/, committed).

Each seed is a header in the byte layout of fuzz_operators.cpp (see its top comment); the
tensor records and data are left to their defaults (zero bytes: consistent, contiguous,
present) unless a seed sets a layout, so every seed is a small valid problem of one kind or
one precise mistake, and libFuzzer mutates from there. Run: python3 tests/fuzz/make_seeds.py
"""
import itertools
import pathlib

OUT = pathlib.Path(__file__).resolve().parent / "corpus"

FLAG_GRAD, FLAG_DP, FLAG_PIN, FLAG_POUT, FLAG_NOMAP, FLAG_STREAM, FLAG_REEXEC = 1, 2, 4, 8, 16, 32, 64
FLAG_UNPERMUTE = 128  # the unpermute pair (fuzz_unpermute.cpp): 8 tensor records
F32, F16, BF16 = 0, 1, 2  # value-dtype byte (index into {f32, f16, bf16})


def header(flags, T, E, H, K, C, vt=BF16, probs=0, map_bool=1, ws=0, extra=0, attr=0, attr2=0):
    # flags, T, E, H, K, C, attribute, attribute2, value dtype, probs dtype, map kind,
    # map dtype mutation, workspace mode, extra
    return bytes([flags, T, E, H, K, C, attr, attr2, vt, probs, map_bool, 0, ws, extra])


def record(shape=0, dtype=0, layout=(0,), offset=0, storage=0, presence=0):
    return bytes([shape, dtype, *layout, offset, storage, presence])


def cxx_only_seeds(seeds):
    """The operators without a C API, through the C++ API (fuzz_ragged.cpp, fuzz_sort_chunks.cpp)."""
    # The ragged pair (fuzz_ragged.cpp, extra bit 5; bit 6 unpermute, bit 7 arbitrary index):
    # every operator in both modes, probs or not, the four map dtypes (attribute2 bits 2-3),
    # fp32 probs with bf16 tokens, no map, empty problems, a workspace too small.
    RAGGED, RAG_UNP, RAG_ANY = 32, 64, 128
    for grad, unp, dp, probs in itertools.product((0, 1), (0, 1), (0, 1), (0, 1)):
        flags = FLAG_UNPERMUTE | (FLAG_GRAD if grad else 0) | (FLAG_DP if dp else 0)
        flags |= (FLAG_PIN | FLAG_POUT) if probs else 0
        name = (f"rag-{'unp' if unp else 'perm'}{'-grad' if grad else ''}-{'dp' if dp else 'dl'}-"
                f"{'p' if probs else 'np'}")
        seeds[name] = header(flags, T=7, E=5, H=9, K=2, C=3, vt=(F32, BF16)[probs],
                             extra=RAGGED | (RAG_UNP if unp else 0), attr2=4 * (grad + 2 * unp))
    seeds["rag-perm-f32probs-i32map"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 9, 6, 33, 3, 0,
                                               vt=BF16, probs=210, extra=RAGGED, attr2=8)
    seeds["rag-unp-grad-wide-u8map"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_PIN | FLAG_POUT, 9, 6,
                                              70, 3, 0, extra=RAGGED | RAG_UNP, attr2=4)
    seeds["rag-unp-nomap"] = header(FLAG_UNPERMUTE | FLAG_NOMAP, 6, 4, 9, 2, 0, extra=RAGGED | RAG_UNP)
    seeds["rag-unp-any-index"] = header(FLAG_UNPERMUTE | FLAG_PIN, 6, 4, 9, 2, 0,
                                        extra=RAGGED | RAG_UNP | RAG_ANY)
    seeds["rag-perm-grad-any-index"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_PIN | FLAG_POUT, 6, 4,
                                              9, 2, 0, extra=RAGGED | RAG_ANY)
    seeds["rag-perm-h0"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 4, 3, 0, 2, 0, extra=RAGGED)
    seeds["rag-unp-grad-t0"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_PIN | FLAG_POUT, 0, 3, 5, 2, 0,
                                      extra=RAGGED | RAG_UNP)
    seeds["rag-perm-grad-e0"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_PIN | FLAG_POUT, 4, 0, 5, 2, 0,
                                       extra=RAGGED)
    seeds["rag-perm-ws-small"] = header(FLAG_UNPERMUTE, 5, 4, 9, 2, 0, ws=205, extra=RAGGED)
    seeds["rag-unp-ws-null"] = header(FLAG_UNPERMUTE | FLAG_PIN, 5, 4, 9, 2, 0, ws=225,
                                      extra=RAGGED | RAG_UNP)
    # The chunk sort (fuzz_sort_chunks.cpp: the ragged bit with attribute2 bits 4-5; S = E).
    SORT_CHUNKS = 48
    for grad, probs in itertools.product((0, 1), (0, 1)):
        flags = FLAG_UNPERMUTE | (FLAG_GRAD if grad else 0) | ((FLAG_PIN | FLAG_POUT) if probs else 0)
        seeds[f"sort-chunks{'-grad' if grad else ''}-{'p' if probs else 'np'}"] = header(
            flags, T=23, E=5, H=9, K=0, C=0, vt=(F16, BF16)[probs], probs=(0, 210)[probs],
            extra=RAGGED, attr2=SORT_CHUNKS)
    seeds["sort-chunks-wide-one-chunk"] = header(FLAG_UNPERMUTE, 40, 1, 70, 0, 0, extra=RAGGED,
                                                 attr2=SORT_CHUNKS)
    seeds["sort-chunks-any"] = header(FLAG_UNPERMUTE | FLAG_GRAD, 12, 4, 5, 0, 0,
                                      extra=RAGGED | RAG_ANY, attr2=SORT_CHUNKS)
    seeds["sort-chunks-t0"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 0, 3, 5, 0, 0,
                                     extra=RAGGED, attr2=SORT_CHUNKS)


def main():
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("seed-*"):
        old.unlink()
    seeds = {}
    # Valid problems: both operators, both modes, with and without probs, three dtypes.
    for grad, dp, probs, vt in itertools.product((0, 1), (0, 1), (0, 1), (F32, F16, BF16)):
        flags = (FLAG_GRAD if grad else 0) | (FLAG_DP if dp else 0)
        flags |= (FLAG_PIN | FLAG_POUT) if probs else 0
        name = f"{'grad' if grad else 'fwd'}-{'dp' if dp else 'dl'}-{'p' if probs else 'np'}-{vt}"
        seeds[name] = header(flags, T=5, E=4, H=9, K=2, C=3, vt=vt, probs=(50 if probs else 0))
    # SIMD-sized rows, a created stream, re-execution, bf16 with fp32 probs.
    seeds["grad-dl-wide"] = header(FLAG_GRAD | FLAG_PIN | FLAG_POUT, T=7, E=8, H=40, K=3, C=0)
    seeds["fwd-dl-wide"] = header(FLAG_STREAM, T=9, E=6, H=33, K=6, C=0)
    seeds["grad-dp-stream"] = header(FLAG_GRAD | FLAG_DP | FLAG_STREAM | FLAG_REEXEC, 6, 3, 17, 0, 4)
    seeds["fwd-dp-f32probs"] = header(FLAG_DP | FLAG_PIN | FLAG_POUT, 6, 3, 8, 0, 2, vt=BF16, probs=210)
    # Only one of the two probs tensors (zero fill / ignored).
    seeds["fwd-zero-fill"] = header(FLAG_POUT, 4, 3, 5, 3, 0)
    seeds["grad-zero-fill"] = header(FLAG_GRAD | FLAG_POUT | FLAG_NOMAP, 4, 3, 5, 2, 0)
    # Empty problems: K = 0, C = 0, H = 0.
    seeds["fwd-k0"] = header(0, 4, 3, 5, 0, 0)
    seeds["grad-dp-c0"] = header(FLAG_GRAD | FLAG_DP, 4, 3, 5, 0, 0)
    seeds["fwd-h0"] = header(FLAG_PIN | FLAG_POUT, 4, 3, 0, 2, 0)
    # Workspace mistakes: too small, null with size > 0, larger.
    seeds["grad-dl-ws-small"] = header(FLAG_GRAD, 5, 4, 9, 2, 0, ws=205)
    seeds["grad-dp-ws-null"] = header(FLAG_GRAD | FLAG_DP, 5, 4, 9, 0, 3, ws=225)
    seeds["fwd-ws-large"] = header(0, 5, 4, 9, 2, 0, ws=245)
    # Null out-parameters of the first phase.
    seeds["fwd-null-wssize"] = header(0, 5, 4, 9, 2, 0, extra=3)
    seeds["grad-null-exec"] = header(FLAG_GRAD, 5, 4, 9, 2, 0, extra=12)
    # Attributes out of range / overflowing (specials: 200 = -1, 203 = INT64_MAX).
    seeds["fwd-numout-neg"] = header(0, 5, 4, 9, 2, 0, attr=200) + bytes([200])
    seeds["grad-experts-max"] = header(FLAG_GRAD, 5, 4, 9, 2, 0, attr=200) + bytes([203])
    seeds["fwd-k-over-512"] = header(0, 1, 4, 1, 0, 0, attr=200) + bytes([219])  # 513
    # Huge declared dims (2^40, INT64_MAX): rejected without allocating.
    seeds["fwd-huge-h"] = header(0, 5, 4, 213, 2, 0)
    seeds["grad-huge-t"] = header(FLAG_GRAD | FLAG_DP, 203, 4, 9, 0, 3)
    seeds["grad-rh-overflow"] = header(FLAG_GRAD, 1, 4, 211, 212, 0)  # R*H overflows
    # Strided layouts on the first tensor: padded, column-major, zero, negative strides.
    for name, layout in {"pad": (130, 1, 2), "colmajor": (165, 1), "zero": (180, 0),
                         "neg": (195, 1), "rand": (210, 3, 250)}.items():
        rec = record(layout=layout)
        seeds[f"fwd-layout-{name}"] = header(0, 5, 4, 9, 2, 0) + rec
        seeds[f"grad-layout-{name}"] = header(FLAG_GRAD | FLAG_PIN | FLAG_POUT, 5, 4, 9, 2, 0) + rec
    # Storage one element too small, a null data pointer, a missing required tensor.
    seeds["grad-storage-short"] = header(FLAG_GRAD, 5, 4, 9, 2, 0) + record(storage=225)
    seeds["fwd-null-data"] = header(0, 5, 4, 9, 2, 0) + record(presence=250)
    seeds["grad-null-g"] = header(FLAG_GRAD, 5, 4, 9, 2, 0) + record(presence=242)
    # Wrong dtype and rank.
    seeds["grad-g-int64"] = header(FLAG_GRAD, 5, 4, 9, 2, 0) + record(dtype=246)
    seeds["fwd-rank3"] = header(0, 5, 4, 9, 2, 0) + record(shape=245) + bytes([2])
    # The unpermute pair: both operators, both modes, probs (and side outputs / dP) or not.
    for grad, dp, probs, vt in itertools.product((0, 1), (0, 1), (0, 1), (F32, F16, BF16)):
        flags = FLAG_UNPERMUTE | (FLAG_GRAD if grad else 0) | (FLAG_DP if dp else 0)
        flags |= (FLAG_PIN | FLAG_POUT) if probs else 0
        name = f"unp-{'grad' if grad else 'fwd'}-{'dp' if dp else 'dl'}-{'p' if probs else 'np'}-{vt}"
        seeds[name] = header(flags, T=5, E=4, H=9, K=2, C=3, vt=vt, probs=(50 if probs else 0))
    seeds["unp-fwd-dl-wide-f32probs"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 7, 8, 70, 3, 0,
                                               vt=BF16, probs=210)
    seeds["unp-grad-dp-stream"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_DP | FLAG_PIN | FLAG_POUT |
                                         FLAG_STREAM | FLAG_REEXEC, 6, 3, 40, 0, 4)
    # No restoreShape and no probs (161001); restoreShape from the input; rows named twice.
    seeds["unp-fwd-no-restore"] = header(FLAG_UNPERMUTE, 5, 4, 9, 2, 0, attr2=3)
    seeds["unp-fwd-restore-wrong"] = header(FLAG_UNPERMUTE, 5, 4, 9, 2, 0, attr=200) + bytes([5, 10])
    seeds["unp-grad-repeated-rows"] = header(FLAG_UNPERMUTE | FLAG_GRAD, 5, 4, 9, 2, 0, extra=16)
    # CANN's tiling rejections of the Grad (561002): C > T with probs, K > E with probs.
    seeds["unp-grad-dp-c-over-t"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_DP | FLAG_PIN, 3, 2, 5, 0, 4)
    seeds["unp-grad-dl-k-over-e"] = header(FLAG_UNPERMUTE | FLAG_GRAD | FLAG_PIN, 3, 2, 5, 3, 0)
    # Empty: H = 0, K = 0; a workspace too small; a strided first tensor.
    seeds["unp-fwd-h0"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 4, 3, 0, 2, 0)
    seeds["unp-grad-k0"] = header(FLAG_UNPERMUTE | FLAG_GRAD, 4, 3, 5, 0, 0)
    seeds["unp-grad-ws-small"] = header(FLAG_UNPERMUTE | FLAG_GRAD, 5, 4, 9, 2, 0, ws=205)
    seeds["unp-fwd-layout-pad"] = header(FLAG_UNPERMUTE | FLAG_PIN | FLAG_POUT, 5, 4, 9, 2, 0) + record(layout=(130, 1, 2))
    cxx_only_seeds(seeds)
    for name, data in seeds.items():
        (OUT / f"seed-{name}").write_bytes(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
