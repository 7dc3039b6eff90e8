"""Segmenter corpus cases: input text, expected segments and options, one rule per group.

Rule cases switch the eager first fragment and short-sentence merging off (``PLAIN``) so that
each shows one rule; ``reply`` cases (``replies.py``) are realistic LLM replies under the
default options, and the benchmark streams them.
"""

# ruff: noqa: RUF001 - the cases use full-width CJK punctuation and dashes on purpose

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PLAIN: dict[str, Any] = {"eager_min_words": None, "merge_under_words": 0}


@dataclass(frozen=True)
class Case:
    """One corpus entry: feeding ``text`` with ``options`` yields ``expected``."""

    group: str
    text: str
    expected: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def is_reply(self) -> bool:
        """A realistic LLM reply under default options."""
        return self.group == "reply"


def group(name: str, *cases: tuple[Any, ...], **options: Any) -> list[Case]:
    """Cases as (text, *expected) or (text, *expected, {options}) tuples."""
    out = []
    for text, *rest in cases:
        extra = rest.pop() if rest and isinstance(rest[-1], dict) else {}
        out.append(Case(name, text, tuple(rest), {**options, **extra}))
    return out


SENTENCE_ENDS = group(
    "sentence ends",
    ("Hello there. How are you?", "Hello there.", "How are you?"),
    ("It works! Try it.", "It works!", "Try it."),
    ("Is it ready? Yes, it is.", "Is it ready?", "Yes, it is."),
    ("Wait!! Really?! Okay.", "Wait!!", "Really?!", "Okay."),
    ('He said "Stop." Then he left.', 'He said "Stop."', "Then he left."),
    ("She asked “Why?” Nobody knew.", "She asked “Why?”", "Nobody knew."),
    (
        "(This is an aside.) The main point follows.",
        "(This is an aside.)",
        "The main point follows.",
    ),
    ("It was 'fine.' We moved on.", "It was 'fine.'", "We moved on."),
    ("The answer is 42. That is final.", "The answer is 42.", "That is final."),
    ("It costs $5. That is cheap.", "It costs $5.", "That is cheap."),
    ("We waited… Then it started.", "We waited…", "Then it started."),
    ("Done. 3 files changed.", "Done.", "3 files changed."),
    ("The end.", "The end."),
    ("No punctuation at the end", "No punctuation at the end"),
    ("One.Two", "One.Two"),
    ("今日は晴れです。明日は雨です。", "今日は晴れです。", "明日は雨です。"),
    ("你好！你是谁？我是助手。", "你好！", "你是谁？", "我是助手。"),
    ("他说「好。」然后走了。", "他说「好。」", "然后走了。"),
    ("Привет. Как дела?", "Привет.", "Как дела?"),
    ("¿Qué tal? ¡Muy bien!", "¿Qué tal?", "¡Muy bien!"),
    ("Is this right?\nYes.", "Is this right?", "Yes."),
    ("Fine.   Next one.", "Fine.", "Next one."),
    ("It was (maybe?) fine.", "It was (maybe?) fine."),
    ('"Really?" she asked. "Yes!" he said.', '"Really?" she asked.', '"Yes!" he said.'),
    ("Yahoo! is a website.", "Yahoo!", "is a website."),
    ('First sentence. "Quoted start" follows.', "First sentence.", '"Quoted start" follows.'),
    **PLAIN,
)

BREAKS = group(
    "breaks",
    ("First paragraph\n\nSecond paragraph", "First paragraph", "Second paragraph"),
    ("Line one\nLine two", "Line one", "Line two"),
    ("a sentence that is\nwrapped in the middle.", "a sentence that is wrapped in the middle."),
    ("Shopping list:\n- eggs\n- milk\n- bread", "Shopping list:", "eggs", "milk", "bread"),
    ("Options:\n* red\n* blue", "Options:", "red", "blue"),
    ("Steps:\n+ one\n+ two", "Steps:", "one", "two"),
    ("Pick one:\n• tea\n• coffee", "Pick one:", "tea", "coffee"),
    ("Steps:\n1. Open it.\n2. Close it.", "Steps:", "1. Open it.", "2. Close it."),
    ("1) First\n2) Second", "1) First", "2) Second"),
    ("# Title\nBody text.", "Title", "Body text."),
    ("Intro.\n## Details\nMore text.", "Intro.", "Details", "More text."),
    ("### Step 3: Deploy ###\nGo.", "Step 3: Deploy", "Go."),
    ("- item one\n  continued here\n- item two", "item one continued here", "item two"),
    ("- outer\n  - inner\n    - deepest", "outer", "inner", "deepest"),
    ("Text.\n\n\n\nMore text.", "Text.", "More text."),
    ("Before\n\n---\n\nAfter", "Before", "After"),
    ("Title\n=====\nBody.", "Title", "Body."),
    ("Header line\r\nSecond line\r\n", "Header line", "Second line"),
    ("**Note:**\nKeep it short.", "Note:", "Keep it short."),
    ("> Quoted line.\n> Another line.", "Quoted line.", "Another line."),
    (
        "A list item mid-line - like this - is not a list.",
        "A list item mid-line - like this - is not a list.",
    ),
    (
        "#hashtag is not a heading. C# is a language.",
        "#hashtag is not a heading.",
        "C# is a language.",
    ),
    ("Pi is roughly:\n3.14 and a bit.", "Pi is roughly:", "3.14 and a bit."),
    (
        "2024 was a good year.\n2025 will be better.",
        "2024 was a good year.",
        "2025 will be better.",
    ),
    **PLAIN,
)

ABBREVIATIONS = group(
    "abbreviations",
    ("Dr. Smith will see you now.", "Dr. Smith will see you now."),
    ("Ask Mr. Brown and Mrs. Green.", "Ask Mr. Brown and Mrs. Green."),
    ("Ms. Lee met Prof. Ng today.", "Ms. Lee met Prof. Ng today."),
    ("We visited St. Louis. It was hot.", "We visited St. Louis.", "It was hot."),
    ("Turn left on Main St. The shop is there.", "Turn left on Main St.", "The shop is there."),
    ("Use a tool, e.g. a hammer. It helps.", "Use a tool, e.g. a hammer.", "It helps."),
    ("Bring fruit, e.g. Apples or pears.", "Bring fruit, e.g. Apples or pears."),
    ("It is done, i.e. finished.", "It is done, i.e. finished."),
    ("Use i.e. When you mean that is.", "Use i.e. When you mean that is."),
    ("Eggs, milk, etc. are fine.", "Eggs, milk, etc. are fine."),
    ("Eggs, milk, etc. The list goes on.", "Eggs, milk, etc.", "The list goes on."),
    ("Python vs. Java is a classic debate.", "Python vs. Java is a classic debate."),
    ("Meet at 9 a.m. tomorrow.", "Meet at 9 a.m. tomorrow."),
    ("The call is at 5 p.m. Please be on time.", "The call is at 5 p.m.", "Please be on time."),
    ("It ends at 5 p.m. Eastern time.", "It ends at 5 p.m. Eastern time."),
    ("The U.S. economy grew.", "The U.S. economy grew."),
    ("The U.S. Senate voted.", "The U.S. Senate voted."),
    ("She moved to the U.S. It was a big change.", "She moved to the U.S.", "It was a big change."),
    ("He has a Ph.D. in physics.", "He has a Ph.D. in physics."),
    ("She earned a Ph.D. Then she taught.", "She earned a Ph.D.", "Then she taught."),
    ("Apple Inc. announced a phone.", "Apple Inc. announced a phone."),
    ("He works at Acme Inc. The pay is good.", "He works at Acme Inc.", "The pay is good."),
    ("The event is on Jan. 5 this year.", "The event is on Jan. 5 this year."),
    ("It opened in Sept. 2019.", "It opened in Sept. 2019."),
    ("See Fig. 3 for details.", "See Fig. 3 for details."),
    ("Track No. 7 is my favourite.", "Track No. 7 is my favourite."),
    ("No. It is not.", "No.", "It is not."),
    ("Smith et al. showed this.", "Smith et al. showed this."),
    ("Martin Luther King Jr. was a leader.", "Martin Luther King Jr. was a leader."),
    ("Gen. Patton and Capt. Kirk met Sen. Warren.", "Gen. Patton and Capt. Kirk met Sen. Warren."),
    ("It weighs approx. 5 kg.", "It weighs approx. 5 kg."),
    ("Compare it (cf. Section 2).", "Compare it (cf. Section 2)."),
    ("DR. NO is a film. It is old.", "DR. NO is a film.", "It is old."),
    **PLAIN,
)

# What the TTS server's normalizer reads (prices, times, addresses, abbreviations): one
# segment must hold each whole, so the reading is never cut in two.
SPOKEN_FORMS = group(
    "spoken forms",
    ("It costs $5.99 at the store. Come early.", "It costs $5.99 at the store.", "Come early."),
    ("Open 9:30 a.m. to 5 p.m. daily.", "Open 9:30 a.m. to 5 p.m. daily."),
    ("We open at 9 A.M. Monday to Friday.", "We open at 9 A.M. Monday to Friday."),
    ("Meet at 10:30 A.M. Sharp.", "Meet at 10:30 A.M. Sharp."),
    ("It is at 1600 Pennsylvania Ave. NW today.", "It is at 1600 Pennsylvania Ave. NW today."),
    ("Go up Mt. Everest with a guide.", "Go up Mt. Everest with a guide."),
    ("He lives in Ft. Worth now.", "He lives in Ft. Worth now."),
    ("We are in Ste. 200 on Elm Rd. It is here.", "We are in Ste. 200 on Elm Rd.", "It is here."),
    ("She lives in Apt. 4B upstairs.", "She lives in Apt. 4B upstairs."),
    ("Call ext. 204 for sales.", "Call ext. 204 for sales."),
    ("Call 555-123-4567 today. We answer.", "Call 555-123-4567 today.", "We answer."),
    ("Write to bob.smith@example.com. We reply.", "Write to bob.smith@example.com.", "We reply."),
    ("See www.example.com/help for more.", "See www.example.com/help for more."),
    ("It costs approx. $1.2M per year.", "It costs approx. $1.2M per year."),
    ("The file is 4.5 GB. Download it.", "The file is 4.5 GB.", "Download it."),
    ("We met on Mar. 5, 2024 in Paris.", "We met on Mar. 5, 2024 in Paris."),
    ("Doors open Fri. at noon.", "Doors open Fri. at noon."),
    # "Dr." never ends a sentence (Doctor Smith would be cut): Drive is read whole, too.
    ("He lives on Elm Dr. The house is blue.", "He lives on Elm Dr. The house is blue."),
    **PLAIN,
)

INITIALS = group(
    "initials",
    ("J. R. R. Tolkien wrote it.", "J. R. R. Tolkien wrote it."),
    ("J.R.R. Tolkien wrote it.", "J.R.R. Tolkien wrote it."),
    ("John F. Kennedy spoke.", "John F. Kennedy spoke."),
    ("A. A. Milne wrote Winnie.", "A. A. Milne wrote Winnie."),
    ("We chose plan B. It worked.", "We chose plan B.", "It worked."),
    ("That was World War I. It ended in 1918.", "That was World War I.", "It ended in 1918."),
    **PLAIN,
)

NUMBERS = group(
    "numbers",
    ("Pi is about 3.14 and e is 2.718.", "Pi is about 3.14 and e is 2.718."),
    ("Upgrade to v2.1.0 now. It is stable.", "Upgrade to v2.1.0 now.", "It is stable."),
    ("Python 3.12 is out.", "Python 3.12 is out."),
    ("It costs $3.50 today.", "It costs $3.50 today."),
    ("Revenue was €1,250.75 in total.", "Revenue was €1,250.75 in total."),
    ("Meet me at 5:30. Bring snacks.", "Meet me at 5:30.", "Bring snacks."),
    ("The ratio is 16:9, the standard.", "The ratio is 16:9, the standard."),
    ("In 2019. 2020 was harder.", "In 2019. 2020 was harder."),
    ("We sold 1,000 units.", "We sold 1,000 units."),
    ("Scores were 9.5, 8.7 and 7.2.", "Scores were 9.5, 8.7 and 7.2."),
    ("The IP is 192.168.1.10.", "The IP is 192.168.1.10."),
    **PLAIN,
)

LIST_MARKERS = group(
    "list markers",
    ("Steps: 1. Open the app. 2. Sign in.", "Steps: 1. Open the app.", "2. Sign in."),
    ("1. Preheat the oven.", "1. Preheat the oven."),
    ("10. Tenth item here.", "10. Tenth item here."),
    ("Do this. 2. Then that.", "Do this.", "2. Then that."),
    ("Chapter 3. The story continues.", "Chapter 3.", "The story continues."),
    **PLAIN,
)

ELLIPSES = group(
    "ellipses",
    ("Well... maybe not.", "Well... maybe not."),
    ("I thought… perhaps we could.", "I thought… perhaps we could."),
    ("Loading... Done.", "Loading...", "Done."),
    ("Wait...what happened?", "Wait...what happened?"),
    ("And so on...", "And so on..."),
    ("Hmm.. let me think.", "Hmm.. let me think."),
    **PLAIN,
)

REFERENCES = group(
    "urls, e-mails, files",
    (
        "Visit https://example.com/docs/v1.2/index.html for more.",
        "Visit https://example.com/docs/v1.2/index.html for more.",
    ),
    ("Go to example.com. It has docs.", "Go to example.com.", "It has docs."),
    ("See https://x.org/search?q=a.b&lang=en!", "See https://x.org/search?q=a.b&lang=en!"),
    ("Mail jane.doe@mail.example.org today.", "Mail jane.doe@mail.example.org today."),
    ("Write to me at a.b@c.io. Thanks!", "Write to me at a.b@c.io.", "Thanks!"),
    ("Edit config.yaml and restart.", "Edit config.yaml and restart."),
    ("Open main.py. Then run it.", "Open main.py.", "Then run it."),
    ("The file is named README.md here.", "The file is named README.md here."),
    ("Check www.python.org/downloads.", "Check www.python.org/downloads."),
    ("Use node.js or Vue.js for it.", "Use node.js or Vue.js for it."),
    ("Run ./build.sh --fast now.", "Run ./build.sh --fast now."),
    **PLAIN,
)

CODE_SPANS = group(
    "code spans",
    ("Call `os.path.join()` here.", "Call os.path.join() here."),
    ("Run `make test. Then deploy` now.", "Run make test. Then deploy now."),
    ("Use `a, b = b, a` to swap them.", "Use a, b = b, a to swap them."),
    ("Type ``echo `hi` now`` to test.", "Type echo `hi` now to test."),
    ("Install `numpy`. It is fast.", "Install numpy.", "It is fast."),
    ("Set `x = 1! Y? Z.` and go.", "Set x = 1! Y? Z. and go."),
    ("A lone ` backtick. Odd.", "A lone backtick. Odd."),
    ("Unclosed `code span\nNew line. Here.", "Unclosed code span", "New line.", "Here."),
    **PLAIN,
)

MARKDOWN = group(
    "markdown",
    ("This is **very** important.", "This is very important."),
    ("This is *quite* good and _also_ fine.", "This is quite good and also fine."),
    ("It is __bold__ and ~~struck~~ text.", "It is bold and struck text."),
    ("***Both*** styles at once.", "Both styles at once."),
    ("Compute 2 * 3 * 4 first.", "Compute 2 * 3 * 4 first."),
    ("Use 2*3 or a*b here.", "Use 2*3 or a*b here."),
    ("Rename my_variable_name to snake_case.", "Rename my_variable_name to snake_case."),
    ("Read [the docs](https://docs.example.com/a_(b)) first.", "Read the docs first."),
    ("See [**this** guide](http://x.io). Then start.", "See this guide.", "Then start."),
    ("A [bracket] is not a link.", "A [bracket] is not a link."),
    ("Here ![a cat](cat.png) sits.", "Here a cat sits."),
    ("Wow! [Click](u) now.", "Wow!", "Click now."),
    ("Escaped \\*stars\\* stay.", "Escaped *stars* stay."),
    ("Path C:\\Users\\me is fine.", "Path C:\\Users\\me is fine."),
    ("Approximately ~5 minutes.", "Approximately ~5 minutes."),
    (
        "Example:\n```python\nprint('Hi. There.')\n```\nThat prints it.",
        "Example:",
        "That prints it.",
    ),
    (
        "Example:\n```\ncode here\n```\nDone.",
        "Example:",
        "Here is some code.",
        "Done.",
        {"code_block_phrase": "Here is some code."},
    ),
    ("Unclosed fence:\n```bash\nrm -rf /tmp/x\n", "Unclosed fence:"),
    ("Tilde fence:\n~~~\nx = 1\n~~~\nAfter.", "Tilde fence:", "After."),
    ("| Name | Age |\n|------|----:|\n| Ann | 30 |", "Name Age", "Ann 30"),
    ("Use a | b in shell.", "Use a | b in shell."),
    ("> **Tip:** save often.", "Tip: save often."),
    ("* * *\nAfter the rule.", "After the rule."),
    ("Star at the end *", "Star at the end *"),
    ("**Bold at start** then text.", "Bold at start then text."),
    ("The __init__ method.", "The init method."),
    **PLAIN,
)

EAGER = group(
    "eager first fragment",
    (
        "Well, that is a really good question, and the answer is simple.",
        "Well, that is a really good question,",
        "and the answer is simple.",
    ),
    ("Sure, I can help with that.", "Sure, I can help with that."),
    (
        "Here is a quick overview: it is fast, small and free.",
        "Here is a quick overview:",
        "it is fast, small and free.",
    ),
    (
        "The first part is long enough; the second part follows. Later, sentences stay whole.",
        "The first part is long enough;",
        "the second part follows.",
        "Later, sentences stay whole.",
    ),
    ("The model—small as it is—runs anywhere.", "The model—small as it is—", "runs anywhere."),
    ("One two three, four five six.", "One two three, four five six."),
    ("One two three four, five six.", "One two three four,", "five six."),
    ("One two, three four five, six.", "One two, three four five,", "six.", {"eager_min_words": 5}),
    ("One two three four, five six.", "One two three four, five six.", {"eager_min_words": None}),
    ("It costs 1,000 dollars in total, roughly.", "It costs 1,000 dollars in total,", "roughly."),
    ("Call `f(a, b, c, d)` first, then relax.", "Call f(a, b, c, d) first,", "then relax."),
    ("首先我们需要安装，然后运行。", "首先我们需要安装，", "然后运行。"),
    merge_under_words=0,
)

CAP = group(
    "length cap",
    (
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi",
        "alpha beta gamma delta epsilon zeta eta",
        "theta iota kappa lambda mu nu xi",
        {"max_chars": 40},
    ),
    (
        "We went to the market, bought apples and pears, then walked home slowly.",
        "We went to the market,",
        "bought apples and pears,",
        "then walked home slowly.",
        {"max_chars": 30},
    ),
    (
        "Short start, then a very long clause without any break at all here.",
        "Short start, then a very long clause",
        "without any break at all here.",
        {"max_chars": 40},
    ),
    (
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
        "abcdefghijklmnopqrstuvwxyz",
        "abcdefghijklmnopqrstuvwxyz",
        {"max_chars": 26},
    ),
    ("It fits exactly here. Next.", "It fits exactly here.", "Next.", {"max_chars": 21}),
    (
        "Visit https://example.com/a/very/long/path/that/goes/on now.",
        "Visit",
        "https://example.com/a/very/long/path/t",
        "hat/goes/on now.",
        {"max_chars": 38},
    ),
    (
        "A sentence; with marks; spaced out; evenly.",
        "A sentence; with marks;",
        "spaced out; evenly.",
        {"max_chars": 24},
    ),
    **PLAIN,
)

MERGE = group(
    "short sentences",
    ("Sure. Here is the plan.", "Sure. Here is the plan."),
    ("Okay! Let us go.", "Okay! Let us go."),
    ("Yes. No. Maybe so.", "Yes. No.", "Maybe so."),
    ("Got it. Thanks a lot.", "Got it.", "Thanks a lot."),
    ("Sure!\n\nHere is the plan.", "Sure! Here is the plan."),
    ("Done.\n- first item", "Done.", "first item"),
    ("Yes.\n3.14 is close.", "Yes. 3.14 is close."),
    ("Yes.\n3. Close it.", "Yes.", "3. Close it."),
    ("## Setup\nRun it.", "Setup", "Run it."),
    ("Sure. Thanks. Bye.", "Sure. Thanks.", "Bye.", {"merge_under_words": 2}),
    ("All good. Fine.", "All good.", "Fine."),
    ("Got it. Thanks a lot.", "Got it. Thanks a lot.", {"merge_under_words": 3}),
    ("Sure. Here is the plan.", "Sure.", "Here is the plan.", {"merge_under_words": 0}),
    eager_min_words=None,
)
