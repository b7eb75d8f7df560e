# lit configuration: every *.kiln file under tests/lit is a test; `kiln` and
# `FileCheck` resolve to the build's tool and LLVM's FileCheck.
import os
import sys
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".kiln"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.kiln_bin_dir), "tests", "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%difftest", os.path.join(config.kiln_bin_dir, "kiln-difftest")))
config.substitutions.append(("%kiln", os.path.join(config.kiln_bin_dir, "kiln")))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%examples", os.path.join(config.kiln_source_dir, "examples")))
# Keep the user's cache and GPU settings out of the tests.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
for var in ("KILN_DUMP_DIR", "KILN_DEBUG", "KILN_TUNE", "KILN_TUNE_DB", "KILN_MAX_FUSED_OPS"):
    config.environment.pop(var, None)
# Tests that expect a machine without a GPU say `UNSUPPORTED: gpu`.
if os.path.exists("/dev/nvidiactl"):
    config.available_features.add("gpu")
