"""A kernel as the user writes it in entry: and the cubin's symbol for it (kprof.build.entries).
Pure but for the C++ runtime's demangler, which every Linux has."""

from __future__ import annotations

import pytest

from kprof.build import entries
from kprof.spec.fields import entry_problem

SYMBOLS = ["tiled_matmul", "_Z9block_sumIfLi256EEvPKT_PS0_i", "_Z9block_sumIdLi128EEvPKT_PS0_i",
           "_Z25layernorm_forward_kernel1PfS_S_PKfS1_S1_ii", "_ZN2ns4gemmILi128ELi64EEEvPf"]


@pytest.mark.parametrize(("entry", "symbol"), [
    ("tiled_matmul", "tiled_matmul"),  # extern "C": its own name
    # a C++ kernel by its name
    ("layernorm_forward_kernel1", "_Z25layernorm_forward_kernel1PfS_S_PKfS1_S1_ii"),
    ("block_sum<float, 256>", "_Z9block_sumIfLi256EEvPKT_PS0_i"),
    ("block_sum< float,256 >", "_Z9block_sumIfLi256EEvPKT_PS0_i"),  # spacing is not a difference
    ("block_sum<double, 128u>", "_Z9block_sumIdLi128EEvPKT_PS0_i"),  # nor a literal's suffix
    # a define as an argument (--param sets it)
    ("block_sum<float, BLOCK>", "_Z9block_sumIfLi256EEvPKT_PS0_i"),
    ("ns::gemm<128, 64>", "_ZN2ns4gemmILi128ELi64EEEvPf"),
    # a plain name finds it in its namespace (its one instantiation)
    ("gemm", "_ZN2ns4gemmILi128ELi64EEEvPf"),
    ("block_sum", None),  # two instantiations: the user names one
    ("block_sum<float, 512>", None),
    ("nope", None),
])
def test_an_entry_resolves_to_its_symbol(entry, symbol):
    assert entries.resolve(entry, SYMBOLS, {"BLOCK": "256"}) == symbol


def test_the_one_instantiation_of_a_template_is_found_by_its_name():
    assert entries.resolve("block_sum", SYMBOLS[:2]) == "_Z9block_sumIfLi256EEvPKT_PS0_i"


def test_the_wrapper_includes_the_file_unchanged_and_takes_each_templates_address():
    text = entries.wrapper_text("/src/k.cu",
                                ["k", "block_sum<float, 256>", "block_sum<float, 256>", "g<1>"])
    assert text.splitlines() == ['#include "/src/k.cu"',
                                 "__device__ void* __kprof_entry_0() { return "
                                 "(void*)&block_sum<float, 256>; }",
                                 "__device__ void* __kprof_entry_1() { return (void*)&g<1>; }"]


def test_a_cubins_kernels_listed_as_the_source_writes_them():
    assert entries.listing(SYMBOLS) == ("block_sum<double, 128>, block_sum<float, 256>, "
                                        "layernorm_forward_kernel1, ns::gemm<128, 64>, tiled_matmul")
    assert (entries.listing([]) == "none"
            and entries.listing(SYMBOLS, limit=2).endswith("and 3 more"))


@pytest.mark.parametrize(("entry", "ok"), [
    ("k", True), ("ns::k", True), ("::k", True), ("block_sum<float, 256>", True),
    ("k<(int)3, sizeof(float)>", True),
    ("k<a<b>>", True), ("", False), ("1k", False), ("k<float", False), ("k<a>>", False),
    ("k; system", False), ("k<float>(x)", False), ("k\n", False), ("k" * 2000, False),
])
def test_what_an_entry_may_be(entry, ok):
    assert (entry_problem(entry) is None) is ok
