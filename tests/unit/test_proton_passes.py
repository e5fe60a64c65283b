"""The llir stage wrapper of the instrumentation backend's compiler side (no Triton needed)."""
import pytest
from ttgir_samples import IN_LOOP, STRAIGHT

from lepton.backends.instrumentation.passes import ProtonPasses
from lepton.errors import UsageError
from lepton.mode import instrumentation_mode


class Module:
    """Stands for a TTGIR module: Triton's prints as its MLIR text."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def seen_buffer_size(passes, text):
    seen = []

    def make_llir(src, metadata):
        seen.append(getattr(passes._compiling, "buffer_size", 0))
        return "llir"

    assert passes.make_llir(make_llir, Module(text), {}) == "llir"
    return seen[0], getattr(passes._compiling, "buffer_size", 0)


def test_a_kernel_with_bounded_records_compiles_with_a_buffer_that_fits_them():
    passes = ProtonPasses(instrumentation_mode(None), 232448)
    assert seen_buffer_size(passes, STRAIGHT) == (128, 0)  # and forgotten after the stage
    assert seen_buffer_size(passes, IN_LOOP) == (0, 0)  # unbounded: the compiler's default
    assert passes.cache_tag().endswith(":lepton_buffer=auto")


def test_a_buffer_size_or_granularity_the_user_chose_is_kept():
    for mode in ("default:buffer_size=512", "default:granularity=warp_group", "default:sampling_strategy=selective"):
        passes = ProtonPasses(instrumentation_mode(mode), 232448)
        assert seen_buffer_size(passes, STRAIGHT) == (0, 0)
        assert passes.cache_tag() == str(instrumentation_mode(mode))


def test_a_failure_of_the_passes_is_one_line_naming_the_kernel_and_what_to_change():
    passes = ProtonPasses(instrumentation_mode("default:buffer_size=96"), 232448)

    def make_llir(src, metadata):
        raise RuntimeError("PassManager::run failed")

    with pytest.raises(UsageError) as e:
        passes.make_llir(make_llir, Module(STRAIGHT), {})
    text = str(e.value)
    assert "\n" not in text and "kernel work" in text and "buffer_size=96" in text
    assert "buffer_type=global" in text and "PassManager::run failed" in text
    assert getattr(passes._compiling, "buffer_size", 0) == 0


def test_kernels_without_records_pass_through_untouched():
    passes = ProtonPasses(instrumentation_mode(None), 232448)

    def make_llir(src, metadata):
        raise RuntimeError("a plain kernel's own failure")

    with pytest.raises(RuntimeError, match="plain kernel"):
        passes.make_llir(make_llir, Module("module {\n}\n"), {})


def test_the_stages_hook_runs_the_previous_one_and_wraps_llir():
    passes = ProtonPasses(instrumentation_mode(None), 232448)
    calls = []
    stages = {"ttgir": "ttgir stage", "llir": lambda src, metadata: calls.append("llir") or "ok"}
    hook = passes.stages_hook(lambda *args: calls.append("previous"))
    hook(None, stages, None, None, 90)
    assert calls == ["previous"] and stages["ttgir"] == "ttgir stage"
    assert stages["llir"](Module(STRAIGHT), {}) == "ok" and calls == ["previous", "llir"]
