"""The diagnosis record (kprof/diagnosis/model.py): its text, JSON and SARIF."""

from __future__ import annotations

import json

from kprof.diagnosis.model import Cause, Diagnosis, Gain, Line, Try, render, sarif_results


def test_render_json_and_sarif():
    c = Cause("atomics", "global atomics on every element", (("atomics / global accesses", "50%"),),
              "accumulate in shared memory", Gain(12.0, "the roof", 9.5, "try"),
              line=Line("/repo/k.cu", 6, "the atomic"))
    d = Diagnosis("hist", "counters", "latency: no unit above 20%", {"DRAM": 0.05}, 20.0,
                  seconds=1e-3, causes=[c],
                  cannot_see=["coalescing"], tries=[Try({"B": "2"}, "ok", 1e-4, 9.5),
                                         Try({"B": "4"}, "failed-verification", None, None,
                                             "normwise 0.3 > 1e-5")])
    text = render(d)
    assert "1. global atomics on every element at k.cu:6" in text and "9.50x measured" in text
    assert "try B=2: verified, 100.0 us, 9.50x" in text and "cannot see: coalescing" in text
    assert "try B=4: failed-verification (normwise 0.3 > 1e-5)" in text
    assert json.loads(json.dumps(d.to_dict()))["tries"][0] == {"params": {"B": "2"}, "status": "ok",
                                                               "seconds": 1e-4,
                                                              "gain": 9.5, "message": ""}
    res = sarif_results(d, root="/repo")
    assert (res[0]["ruleId"] == "kprof.perf.atomics"
            and "9.50x measured" in res[0]["message"]["text"])
    assert (res[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "k.cu", "uriBaseId": "SRCROOT"})
    assert res[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 6}
    from kprof.diagnosis.model import to_sarif

    doc = to_sarif([d], "0.0", root="/repo")
    assert doc["version"] == "2.1.0" and doc["runs"][0]["results"][0]["ruleIndex"] == 0
    assert doc["runs"][0]["tool"]["driver"]["rules"] == [{"id": "kprof.perf.atomics",
                                                          "name": "kprof.perf.atomics"}]
