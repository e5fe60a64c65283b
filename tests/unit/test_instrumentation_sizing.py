"""The profile buffer Lepton gives an instrumented kernel, read from its TTGIR."""
from ttgir_samples import HEAD, IN_LOOP, IN_WHILE_BODY, STRAIGHT, TAIL

from lepton.backends.instrumentation.sizing import (
    auto_buffer_size,
    buffer_choice,
    num_warps,
    record_ops_outside_loops,
)


def test_records_outside_loops_are_counted_and_those_in_a_loop_make_it_unbounded():
    assert record_ops_outside_loops(STRAIGHT) == 4  # the scf.if's records run at most once
    assert record_ops_outside_loops(IN_LOOP) is None
    assert record_ops_outside_loops(IN_WHILE_BODY) is None
    assert record_ops_outside_loops(HEAD + TAIL) == 0


def test_the_buffer_holds_every_entry_of_every_warp_in_power_of_two_segments():
    assert num_warps(STRAIGHT) == 4
    assert auto_buffer_size(STRAIGHT) == 4 * 32  # 4 records x 8 bytes per warp
    two = STRAIGHT.replace('      proton.record start "then" loc(#loc3)\n      proton.record end "then" loc(#loc3)\n', "")
    assert auto_buffer_size(two) == 4 * 16
    three = two.replace('proton.record end "load" loc(#loc10)', 'proton.record end "load" loc(#loc10)\n'
                        '    proton.record start "x" loc(#loc10)')
    assert auto_buffer_size(three) == 4 * 32  # 24 bytes rounded up to a power of two
    eight_warps = two.replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 8')
    assert auto_buffer_size(eight_warps) == 8 * 16
    specialised = two.replace('"ttg.num-warps" = 4 : i32', '"ttg.num-warps" = 4 : i32, "ttg.total-num-warps" = 12 : i32')
    assert auto_buffer_size(specialised) == 12 * 16


def test_kernels_the_count_cannot_bound_keep_the_compilers_default():
    assert auto_buffer_size(IN_LOOP) == 0
    assert auto_buffer_size(HEAD + TAIL) == 0
    assert auto_buffer_size(STRAIGHT.replace('"ttg.num-warps" = 4 : i32, ', "")) == 0


def test_the_path_counts_say_how_each_kernels_buffer_was_sized():
    assert buffer_choice(STRAIGHT, sizes_buffers=True) == "sized to its records"
    assert buffer_choice(IN_LOOP, sizes_buffers=True) == "default: a record op inside a loop"
    assert buffer_choice(STRAIGHT.replace('"ttg.num-warps" = 4 : i32, ', ""), sizes_buffers=True) \
        == "default: warps unknown"
    assert buffer_choice(STRAIGHT, sizes_buffers=False) == "the mode's"
