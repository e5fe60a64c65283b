"""The threads' time lines that launches are attributed with: marks of each thread's path changes,
and the path of a (thread, time)."""
from __future__ import annotations

import itertools
import threading

import numpy as np

from lepton.model.timeline import ThreadTimelines, paths_at
from lepton.runtime.hot_path import append_mark, append_one_shot


def mark(tl: ThreadTimelines, path: int) -> None:
    """The calling thread is in `path` from now on (on `tl`'s clock)."""
    append_mark(tl.log().marks, tl.clock(), path)


def one_shot(tl: ThreadTimelines, launch_path: int, path: int) -> None:
    """The calling thread's next launch is in `launch_path`, the ones after it in `path`."""
    append_one_shot(tl.log().marks, tl.clock(), launch_path, path)


def ticking_clock(start=1000, step=10):
    ticks = itertools.count(start, step)
    return lambda: next(ticks)


def test_a_thread_is_in_the_path_of_its_last_mark():
    tl = ThreadTimelines(clock=ticking_clock())
    mark(tl, 5)  # t=1000
    mark(tl, 6)  # t=1010
    mark(tl, 5)  # t=1020: back in 5
    mark(tl, 0)  # t=1030: outside every scope
    me = threading.get_native_id()
    times = np.array([999, 1000, 1005, 1010, 1019, 1020, 1029, 1030, 5000])
    got = tl.paths_at(np.full(len(times), me), times)
    assert got.tolist() == [0, 5, 5, 6, 6, 5, 5, 0, 0]


def test_each_thread_has_its_own_time_line():
    tl = ThreadTimelines(clock=ticking_clock())
    ids = {}
    ready = threading.Barrier(2)

    def work(path):
        ready.wait()
        mark(tl, path)
        ids[path] = threading.get_native_id()

    threads = [threading.Thread(target=work, args=(p,)) for p in (7, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = tl.paths_at(np.array([ids[7], ids[8], 12345]), np.array([10**9] * 3))
    first = 7 if tl.census.first == ids[7] else 8
    assert got.tolist() == [7, 8, first]  # a thread that never marked follows the first that did
    assert tl.census.several


def test_a_thread_that_never_marked_follows_the_first_thread_but_takes_none_of_its_launch_ops():
    """torch's autograd threads launch `backward()`'s kernels while the thread that called it waits
    in its scope; a one-shot pair is the marking thread's own next launch."""
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 5)
    mark(tl, 1)
    one_shot(tl, 99, 1)
    mark_times = tl.marks_by_thread()[5][0]
    t = int(mark_times[-1]) + 1
    got = tl.paths_at(np.array([77, 5, 77]), np.array([t, t + 1, t + 2]))
    assert got.tolist() == [1, 99, 1]
    assert tl.census.first == 5 and not tl.census.several


def test_the_census_calls_back_once_when_a_second_thread_marks_before_its_first_mark():
    tl = ThreadTimelines(clock=ticking_clock())
    seen = []
    tl.census.on_second_thread = lambda: seen.append(len(tl.marks_by_thread()))
    mark(tl, 1)
    mark(tl, 2)
    for path in (3, 4):
        t = threading.Thread(target=mark, args=(tl, path))
        t.start()
        t.join()
    assert seen == [1]  # once, before the second thread's log held a mark
    tl.reset()
    assert tl.census.first is None and not tl.census.several


def test_threads_sharing_an_id_one_after_the_other_are_merged_by_time():
    """glibc may hand a new thread the pthread id of one that ended."""
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 42)

    def first():
        mark(tl, 1)  # 1000
        mark(tl, 0)  # 1010

    def second():
        mark(tl, 2)  # 1020

    for fn in (first, second):
        t = threading.Thread(target=fn)
        t.start()
        t.join()
    got = tl.paths_at(np.full(4, 42), np.array([1005, 1015, 1025, 999]))
    assert got.tolist() == [1, 0, 2, 0]


def test_a_mark_copied_half_written_is_left_out():
    tl = ThreadTimelines(clock=ticking_clock())
    mark(tl, 3)
    log = tl._logs[0]
    log.marks.append(2000)  # the time of a mark whose path is not appended yet
    times, paths = tl.marks_by_thread()[log.thread_id]
    assert times.tolist() == [1000] and paths.tolist() == [3]


def test_marks_out_of_time_order_are_sorted():
    """The wall clock can be set back; the marks are then sorted before the lookup."""
    clock = iter([1000, 500, 2000])
    tl = ThreadTimelines(clock=lambda: next(clock), thread_id=lambda: 1)
    mark(tl, 1)
    mark(tl, 2)
    mark(tl, 3)
    times, paths = tl.marks_by_thread()[1]
    assert times.tolist() == [500, 1000, 2000] and paths.tolist() == [2, 1, 3]


def test_forgetting_keeps_the_mark_in_force_and_everything_after():
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 9)
    for p in (1, 2, 3, 4):
        mark(tl, p)  # 1000, 1010, 1020, 1030
    tl.forget_before(1025)
    times, paths = tl.marks_by_thread()[9]
    assert times.tolist() == [1020, 1030] and paths.tolist() == [3, 4]
    assert tl.paths_at(np.array([9, 9]), np.array([1026, 1031])).tolist() == [3, 4]


def test_paths_at_gives_root_before_a_threads_first_mark_and_for_unknown_threads():
    marks = {1: (np.array([100, 200]), np.array([5, 6]))}
    got = paths_at(marks, np.array([1, 1, 1, 2]), np.array([50, 150, 250, 150]))
    assert got.tolist() == [0, 5, 6, 0]


def test_lookups_after_more_marks_see_old_and_new_marks_alike():
    """The numpy mirror of a log grows as marks come; every lookup sees all of them."""
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 5)
    seen = []
    for round_ in range(3):
        for p in range(1, 1500):
            mark(tl, round_ * 10_000 + p)
            mark(tl, 0)
        times, _ = tl.marks_by_thread()[5]
        seen.append(len(times))
        # the mark of path p of this round is at an even index
        assert tl.paths_at(np.array([5]), np.array([times[-2]])).tolist() == [round_ * 10_000 + 1499]
    assert seen == [2998, 5996, 8994]
    assert tl.paths_at(np.array([5]), np.array([1000])).tolist() == [1]


def test_forgetting_then_marking_again_keeps_lookups_right():
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 9)
    for p in (1, 2, 3):
        mark(tl, p)  # 1000, 1010, 1020
    tl.marks_by_thread()
    tl.forget_before(1015)
    mark(tl, 4)  # 1030
    times, paths = tl.marks_by_thread()[9]
    assert times.tolist() == [1010, 1020, 1030] and paths.tolist() == [2, 3, 4]


def test_reset_forgets_every_thread():
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 3)
    mark(tl, 1)
    tl.reset()
    assert tl.marks_by_thread() == {}
    mark(tl, 2)  # 1010, in a new log
    assert tl.paths_at(np.array([3, 3]), np.array([1005, 1010])).tolist() == [0, 2]


def test_the_log_of_an_ended_thread_goes_only_after_a_time_it_had_ended_by():
    """An ended thread's launches up to its end may still be on their way: its log stays until a
    trim whose time is past a time the thread was seen ended at."""
    tl = ThreadTimelines(clock=ticking_clock())
    ids = {}

    def work():
        mark(tl, 7)  # 1000
        ids["worker"] = threading.get_native_id()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    tl.forget_before(5000)  # seen ended now (clock reads 1010): kept, its launches may be pending
    assert tl.paths_at(np.array([ids["worker"]]), np.array([1500])).tolist() == [7]
    tl.forget_before(1005)  # not past the time it was seen ended: still kept
    assert tl.paths_at(np.array([ids["worker"]]), np.array([1500])).tolist() == [7]
    tl.forget_before(1010)
    assert ids["worker"] not in tl.marks_by_thread()


def test_lookups_on_arrays_handed_out_before_a_trim_stay_right():
    tl = ThreadTimelines(clock=ticking_clock(), thread_id=lambda: 4)
    for p in range(1, 6):
        mark(tl, p)  # 1000 .. 1040
    times, paths = tl.marks_by_thread()[4]
    before = (times.copy(), paths.copy())
    tl.forget_before(1025)
    assert times.tolist() == before[0].tolist() and paths.tolist() == before[1].tolist()


def test_a_one_shot_pair_gives_its_path_to_the_next_launch_only():
    tl = ThreadTimelines(clock=ticking_clock())
    mark(tl, 5)  # t=1000: in scope 5
    one_shot(tl, 9, 5)  # t=1010: the next launch is op 9, then back in 5
    mark(tl, 0)  # t=1020
    me = threading.get_native_id()
    times = np.array([1005, 1012, 1015, 1019, 1025])
    assert tl.paths_at(np.full(len(times), me), times).tolist() == [5, 9, 5, 5, 0]


def test_a_one_shot_pair_is_taken_once_across_lookups_and_by_the_earliest_launch():
    tl = ThreadTimelines(clock=ticking_clock())
    one_shot(tl, 9, 5)  # t=1000
    one_shot(tl, 8, 5)  # t=1010
    me = threading.get_native_id()
    # Launches of one lookup need not be in time order; the earliest after a pair takes it.
    assert tl.paths_at(np.full(2, me), np.array([1004, 1001])).tolist() == [5, 9]
    # The next lookup (the next buffer) goes on in time: the first pair was taken already.
    assert tl.paths_at(np.full(3, me), np.array([1006, 1011, 1013])).tolist() == [5, 8, 5]
    assert tl.paths_at(np.full(1, me), np.array([1015])).tolist() == [5]
    one_shot(tl, 7, 6)  # t=1020
    assert tl.paths_at(np.full(2, me), np.array([1021, 1022])).tolist() == [7, 6]


def test_a_pair_taken_on_another_thread_is_not_taken_here():
    tl = ThreadTimelines(clock=ticking_clock())
    one_shot(tl, 9, 5)  # t=1000, this thread
    me = threading.get_native_id()
    # The other thread never marked: it follows this one's path, but not into its pair.
    assert tl.paths_at(np.array([me + 1, me]), np.array([1001, 1002])).tolist() == [5, 9]


def test_forgetting_keeps_a_one_shot_pair_whole():
    tl = ThreadTimelines(clock=ticking_clock())
    mark(tl, 5)  # t=1000
    one_shot(tl, 9, 5)  # t=1010: its launch may come after the horizon
    tl.forget_before(1015)
    me = threading.get_native_id()
    assert tl.paths_at(np.full(2, me), np.array([1016, 1017])).tolist() == [9, 5]
