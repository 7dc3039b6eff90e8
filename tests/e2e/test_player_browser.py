"""The page's player (agent/web/player.js) in real Chromium, driven directly: its lead, a
jitter buffer that grows after an underrun and shrinks after clean turns, and a pause that
fades out and back in rather than clicking."""

from __future__ import annotations

from typing import Any

from tests.e2e.browser_helpers import Page, open_chat
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ["tests.e2e.browser_helpers"]

# A player with a 0.1 s lead; `chunk(turn, seconds)` queues that much silence-free audio (a
# quiet tone) and `later(ms)` lets the audio clock run.
PLAYER_JS = """async () => {
  const { PcmPlayer } = await import("/web/player.js");
  const player = new PcmPlayer({ lead: 0.1, maxLead: 0.4 });
  const ctx = player.ensure();
  await ctx.resume();
  const chunk = (turn, seconds) => {
    const samples = new Int16Array(Math.round(24000 * seconds));
    for (let i = 0; i < samples.length; i++) samples[i] = Math.round(3000 * Math.sin(i / 8));
    return player.enqueue(turn, new Uint8Array(samples.buffer));
  };
  const later = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  window.testPlayer = { player, chunk, later };
}"""


def player_page(page: Page, server: ServerThread) -> None:
    open_chat(page, server)
    page.evaluate(PLAYER_JS)


def test_the_lead_grows_after_an_underrun_and_shrinks_after_clean_turns(
    page: Page, speechless_stack: ServerThread
) -> None:
    """Two underruns in one turn add 50 ms each; a turn with one more underrun keeps its lead;
    every turn that plays clean takes 25 ms off, down to the starting lead and no further."""
    player_page(page, speechless_stack)
    leads: list[Any] = page.evaluate(
        """async () => {
          const { player, chunk, later } = window.testPlayer;
          const leads = [player.lead];
          player.begin(1);
          chunk(1, 0.02);
          for (let i = 0; i < 2; i++) {
            await later(250); // the chunk before has played out: this one is late
            leads.push([chunk(1, 0.02).underrun, player.lead]);
          }
          const clean = async (turn) => {
            player.begin(turn);
            for (let i = 0; i < 4; i++) chunk(turn, 0.05); // all queued at once: no gap
            return player.lead;
          };
          leads.push(await clean(2)); // turn 1 had underruns: its lead stays
          for (let turn = 3; turn < 9; turn++) leads.push(await clean(turn));
          player.stop();
          leads.push(player.lead);
          return leads;
        }"""
    )
    rounded = [lead if isinstance(lead, list) else round(lead, 3) for lead in leads]
    rounded[1:3] = [[late, round(lead, 3)] for late, lead in leads[1:3]]
    assert rounded == [
        0.1,
        [True, 0.15],
        [True, 0.2],
        0.2,  # turn 1 ended with underruns
        0.175,  # turn 2 played clean
        0.15,
        0.125,
        0.1,
        0.1,  # never below the starting lead
        0.1,
        0.1,
    ]


def test_a_turn_of_one_chunk_leaves_the_lead_as_it_is(
    page: Page, speechless_stack: ServerThread
) -> None:
    """One chunk cannot run dry, so it says nothing about the lead."""
    player_page(page, speechless_stack)
    leads = page.evaluate(
        """async () => {
          const { player, chunk, later } = window.testPlayer;
          player.begin(1);
          chunk(1, 0.02);
          await later(200);
          chunk(1, 0.02); // late: 0.15
          player.begin(2);
          chunk(2, 0.5);
          player.begin(3); // turn 2 had one chunk
          return player.lead;
        }"""
    )
    assert round(leads, 3) == 0.15


def test_a_pause_fades_out_and_its_resume_fades_back_in(
    page: Page, speechless_stack: ServerThread
) -> None:
    """Pausing ramps the turn's gain to 0 before the clock stops (no click), and the clock stays
    where it stopped; resuming ramps it back to 1 as the clock runs on."""
    player_page(page, speechless_stack)
    seen = page.evaluate(
        """async () => {
          const { player, chunk, later } = window.testPlayer;
          player.begin(1);
          chunk(1, 2.0);
          await later(300); // playing
          const before = player.turn.gain.gain.value;
          const at = await player.pause();
          await later(200);
          const paused = { gain: player.turn.gain.gain.value, clock: player.currentTime,
                           state: player.ctx.state };
          player.resume();
          await later(200);
          const resumed = { gain: player.turn.gain.gain.value, clock: player.currentTime,
                            state: player.ctx.state };
          player.stop();
          return { before, at, paused, resumed };
        }"""
    )
    assert seen["before"] == 1
    assert seen["paused"]["state"] == "suspended" and seen["paused"]["gain"] == 0
    assert seen["paused"]["clock"] == seen["at"]
    assert seen["resumed"]["state"] == "running" and seen["resumed"]["gain"] == 1
    assert seen["resumed"]["clock"] > seen["at"] + 0.1


def test_a_pause_whose_fade_never_played_stops_at_silence(
    page: Page, speechless_stack: ServerThread
) -> None:
    """An audio thread too late to play the fade within the wait (a busy box): the pause stops
    at gain 0, not mid-fade at full gain, and the resume fades in from there."""
    player_page(page, speechless_stack)
    seen = page.evaluate(
        """async () => {
          const { player, chunk, later } = window.testPlayer;
          player.begin(1);
          chunk(1, 2.0);
          await later(300); // playing
          const real = performance.now.bind(performance);
          let calls = 0;
          performance.now = () => real() + 1000 * calls++; // each look: the wait is over
          await player.pause();
          performance.now = real;
          const paused = { gain: player.turn.gain.gain.value, state: player.ctx.state };
          player.resume();
          await later(200);
          const resumed = player.turn.gain.gain.value;
          player.stop();
          return { paused, resumed };
        }"""
    )
    assert seen["paused"]["state"] == "suspended"
    assert seen["paused"]["gain"] == 0
    assert seen["resumed"] == 1


def test_a_resume_while_the_pause_fades_leaves_the_player_running(
    page: Page, speechless_stack: ServerThread
) -> None:
    """reply.resumed can come within the fade: the context must not be suspended after it."""
    player_page(page, speechless_stack)
    seen = page.evaluate(
        """async () => {
          const { player, chunk, later } = window.testPlayer;
          player.begin(1);
          chunk(1, 1.0);
          await later(100);
          const pausing = player.pause();
          player.resume();
          await pausing;
          await later(100);
          const seen = { state: player.ctx.state, paused: player.paused,
                         gain: player.turn.gain.gain.value };
          player.stop();
          return seen;
        }"""
    )
    assert seen == {"state": "running", "paused": False, "gain": 1}
