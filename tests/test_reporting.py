"""The progress throttle: one clock per channel, shared by stage messages and every step's ticks."""

import time

from pldshuffle._reporting import REPORT_SECONDS, ProgressChannel, build_progress, reporting_to, throttled_reporter


def test_a_step_after_a_long_silence_reports_at_its_first_tick():
    messages: list[str] = []
    channel = ProgressChannel(messages.append)
    channel.last = time.monotonic() - 10 * REPORT_SECONDS  # seconds of other work, nothing said
    tick = build_progress("a new step", channel)
    tick(0.25)
    assert messages == ["a new step: 25 %"]
    tick(0.5)  # just reported: throttled
    assert messages == ["a new step: 25 %"]


def test_stage_messages_restart_the_clock_of_every_step():
    messages: list[str] = []
    channel = ProgressChannel(messages.append)
    channel.last = time.monotonic() - 10 * REPORT_SECONDS
    channel("stage")  # a stage message passes at once and counts as the last message
    say = throttled_reporter(channel)
    say(lambda: "never made")  # not due: the message is not even formatted
    assert messages == ["stage"]


def test_the_context_channel_is_used_and_plain_callables_get_their_own_clock():
    messages: list[str] = []
    with reporting_to(messages.append):
        say = throttled_reporter()
    say("too early")  # a fresh channel: REPORT_SECONDS have not passed
    assert messages == []
    silent = throttled_reporter()  # outside any reporting_to block: nothing anywhere
    silent("nowhere")
    assert messages == []
