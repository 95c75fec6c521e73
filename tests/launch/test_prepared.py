"""The Prepared protocol: the command layer's prepared spec is one, and something that is not (a
resolved spec without its build) is not."""

import pytest

from kprof.launch.prepared import Prepared


@pytest.mark.nvcc
def test_the_command_layers_prepared_spec_is_a_prepared():
    from kprof.commands import pipeline
    from kprof.spec import catalog

    prepared = pipeline.prepare(catalog.load("vector_add"), {"N": 1024}, arch="sm_90")
    assert isinstance(prepared, Prepared)
    assert not isinstance(prepared.resolved, Prepared)
    assert prepared.job(pipeline.RunMode()).target.cubin == str(prepared.built.cubin)
