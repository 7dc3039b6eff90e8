"""Realistic LLM replies under the default options; the benchmark streams them."""

# ruff: noqa: RUF001 - the cases use full-width CJK punctuation and dashes on purpose

from __future__ import annotations

from agent.segmenter.corpus.cases import group

REPLIES = group(
    "reply",
    (
        "Sure! Here's a quick recipe for pancakes.\n\n"
        "**Ingredients:**\n- 1 cup of flour\n- 2 tbsp. sugar\n- 1 egg\n\n"
        "**Steps:**\n1. Mix the dry ingredients.\n2. Add the egg and milk, then whisk.\n"
        "3. Cook on a hot pan for approx. 2 minutes per side.\n\nEnjoy your breakfast!",
        "Sure! Here's a quick recipe for pancakes.",
        "Ingredients:",
        "1 cup of flour",
        "2 tbsp. sugar",
        "1 egg",
        "Steps:",
        "1. Mix the dry ingredients.",
        "2. Add the egg and milk, then whisk.",
        "3. Cook on a hot pan for approx. 2 minutes per side.",
        "Enjoy your breakfast!",
    ),
    (
        "Great question! The capital of Australia is **Canberra**, not Sydney. "
        "It was chosen in 1908 as a compromise between Sydney and Melbourne.",
        "Great question!",
        "The capital of Australia is Canberra, not Sydney.",
        "It was chosen in 1908 as a compromise between Sydney and Melbourne.",
    ),
    (
        "To install it, run `pip install requests` in your terminal. Then import it with "
        "`import requests` and call `requests.get(url)`. That's all there is to it.",
        "To install it, run pip install requests in your terminal.",
        "Then import it with import requests and call requests.get(url).",
        "That's all there is to it.",
    ),
    (
        "## Summary\n\nThe meeting with Dr. Patel is on Jan. 12 at 3 p.m. in Room 4.2. "
        "Please bring the Q3 report (v1.4) and your laptop.\n\n## Action items\n\n"
        "- Send the agenda, i.e. the list of topics.\n- Book the room.\n",
        "Summary",
        "The meeting with Dr. Patel is on Jan. 12 at 3 p.m. in Room 4.2.",
        "Please bring the Q3 report (v1.4) and your laptop.",
        "Action items",
        "Send the agenda, i.e. the list of topics.",
        "Book the room.",
    ),
    (
        "Here's a simple Python function:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\n"
        "It takes two numbers and returns their sum. You can call it like `add(2, 3)`.",
        "Here's a simple Python function:",
        "It takes two numbers and returns their sum.",
        "You can call it like add(2, 3).",
    ),
    (
        "Honestly, it depends on what you value most in a laptop. If battery life matters, "
        "the MacBook Air is hard to beat. If you want to game, look at a Windows machine "
        "with a dedicated GPU.",
        "Honestly, it depends on what you value most in a laptop.",
        "If battery life matters, the MacBook Air is hard to beat.",
        "If you want to game, look at a Windows machine with a dedicated GPU.",
    ),
    (
        "Well, there are a few reasons why the sky looks blue, and they all come down to "
        "physics. Sunlight is scattered by air molecules. Blue light scatters more than red "
        "light, so we see blue everywhere we look.",
        "Well, there are a few reasons why the sky looks blue,",
        "and they all come down to physics.",
        "Sunlight is scattered by air molecules.",
        "Blue light scatters more than red light, so we see blue everywhere we look.",
    ),
    (
        "The Eiffel Tower is about 330 m tall. It was built for the 1889 World's Fair "
        "in Paris. At the time, it was the tallest structure in the world!",
        "The Eiffel Tower is about 330 m tall.",
        "It was built for the 1889 World's Fair in Paris.",
        "At the time, it was the tallest structure in the world!",
    ),
    (
        "Okay. Let's break it down:\n\n1. **Budget** – decide how much you can spend.\n"
        "2. **Location** – pick a neighbourhood near work.\n"
        "3. **Viewing** – visit at least 3 places.\n\nGood luck with the search!",
        "Okay. Let's break it down:",
        "1. Budget – decide how much you can spend.",
        "2. Location – pick a neighbourhood near work.",
        "3. Viewing – visit at least 3 places.",
        "Good luck with the search!",
    ),
    (
        "According to the U.S. Census Bureau, the population grew by 0.5% last year. "
        "Most of that growth came from the South, e.g. Texas and Florida.",
        "According to the U.S. Census Bureau,",
        "the population grew by 0.5% last year.",
        "Most of that growth came from the South, e.g. Texas and Florida.",
    ),
    (
        "You can reach support at help@example.com or visit "
        "[our help center](https://example.com/help). They're open 9 a.m. to 5 p.m. "
        "on weekdays.",
        "You can reach support at help@example.com or visit our help center.",
        "They're open 9 a.m. to 5 p.m. on weekdays.",
    ),
    (
        "I'm not sure... Let me think. The file `settings.json` controls the theme; "
        'change `"theme": "dark"` to switch. Restart the app afterwards.',
        "I'm not sure...",
        "Let me think.",
        'The file settings.json controls the theme; change "theme": "dark" to switch.',
        "Restart the app afterwards.",
    ),
    (
        "### Quick comparison\n\n| Model | Size |\n|---|---|\n| Kokoro | 82M |\n| XTTS | 467M |\n\n"
        "Kokoro is *much* smaller, which makes it fast on a CPU.",
        "Quick comparison",
        "Model Size",
        "Kokoro 82M",
        "XTTS 467M",
        "Kokoro is much smaller, which makes it fast on a CPU.",
    ),
    (
        "Absolutely! J. K. Rowling wrote seven Harry Potter books. The first one came out "
        "in 1997; the last in 2007.",
        "Absolutely! J. K. Rowling wrote seven Harry Potter books.",
        "The first one came out in 1997; the last in 2007.",
    ),
    (
        "Yes.\n\nThe train leaves at 6:45 a.m. from platform 9. Tickets cost $12.50 each, "
        "or $40 for a family pass.",
        "Yes. The train leaves at 6:45 a.m. from platform 9.",
        "Tickets cost $12.50 each, or $40 for a family pass.",
    ),
    (
        "> Note: this only works on Linux.\n\nFirst, open a terminal. Next, type `ls -la` "
        "and press Enter. You should see a list of files.",
        "Note: this only works on Linux.",
        "First, open a terminal.",
        "Next, type ls -la and press Enter.",
        "You should see a list of files.",
    ),
    (
        "Here are three tips to sleep better:\n\n"
        "* Keep a regular schedule, even on weekends.\n"
        "* Avoid screens for an hour before bed.\n"
        "* Keep the bedroom cool, dark and quiet.\n",
        "Here are three tips to sleep better:",
        "Keep a regular schedule, even on weekends.",
        "Avoid screens for an hour before bed.",
        "Keep the bedroom cool, dark and quiet.",
    ),
    (
        "The formula is E = mc^2, where E is energy, m is mass and c is the speed of light "
        "(about 3.0 x 10^8 m/s). It shows that mass and energy are equivalent.",
        "The formula is E = mc^2,",
        "where E is energy, m is mass and c is the speed of light (about 3.0 x 10^8 m/s).",
        "It shows that mass and energy are equivalent.",
    ),
    (
        "Hi! I'm your assistant. What would you like to do today?",
        "Hi! I'm your assistant.",
        "What would you like to do today?",
    ),
    (
        "Mount Everest is 8,849 m high. Its summit lies on the border of Nepal and China. "
        "Climbers usually start from Base Camp in Apr. or May.",
        "Mount Everest is 8,849 m high.",
        "Its summit lies on the border of Nepal and China.",
        "Climbers usually start from Base Camp in Apr. or May.",
    ),
)

MORE_REPLIES = group(
    "reply",
    (
        "Good morning! Today's forecast for Seattle calls for light rain in the morning, "
        "clearing by early afternoon, with highs around 58°F. Don't forget an umbrella if "
        "you're heading out before noon.",
        "Good morning!",
        "Today's forecast for Seattle calls for light rain in the morning, clearing by early "
        "afternoon, with highs around 58°F.",
        "Don't forget an umbrella if you're heading out before noon.",
    ),
    (
        "The main difference between a virus and a bacterium is size and structure: bacteria "
        "are single-celled organisms that can live on their own, while viruses need a host "
        "cell to reproduce. That's why antibiotics work on bacteria but not on viruses.",
        "The main difference between a virus and a bacterium is size and structure:",
        "bacteria are single-celled organisms that can live on their own, while viruses need "
        "a host cell to reproduce.",
        "That's why antibiotics work on bacteria but not on viruses.",
    ),
    (
        "Here's what you need for the trip:\n\n- **Documents**\n  - Passport (valid for 6+ "
        "months)\n  - Visa, if required\n- **Money**\n  - Some local cash, e.g. for taxis\n\n"
        "Have a great trip!",
        "Here's what you need for the trip:",
        "Documents",
        "Passport (valid for 6+ months)",
        "Visa, if required",
        "Money",
        "Some local cash, e.g. for taxis",
        "Have a great trip!",
    ),
    (
        "## Reading a file in Python\n\nUse the built-in `open()` function with a `with` "
        'block:\n\n```python\nwith open("notes.txt") as f:\n    text = f.read()\n```\n\n'
        "The file is closed automatically when the block ends. For large files, iterate line "
        "by line instead of calling `f.read()`.",
        "Reading a file in Python",
        "Use the built-in open() function with a with block:",
        "The file is closed automatically when the block ends.",
        "For large files, iterate line by line instead of calling f.read().",
    ),
    (
        'As Einstein reportedly said, "Imagination is more important than knowledge." '
        "Whether he really said it is debated, though.",
        "As Einstein reportedly said,",
        '"Imagination is more important than knowledge."',
        "Whether he really said it is debated, though.",
    ),
    (
        "Your order #4521 will arrive on Tuesday between 2:00 and 4:00 p.m. The total was "
        "$84.99, including $5.00 shipping. You can track it at shop.example.com/orders.",
        "Your order #4521 will arrive on Tuesday between 2:00 and 4:00 p.m.",
        "The total was $84.99, including $5.00 shipping.",
        "You can track it at shop.example.com/orders.",
    ),
    (
        "¡Claro! La reunión es el lunes a las 10:30. ¿Necesitas algo más?",
        "¡Claro! La reunión es el lunes a las 10:30.",
        "¿Necesitas algo más?",
    ),
    (
        "当然可以！北京是中国的首都，也是一座历史悠久的城市。你想了解哪些景点？",
        "当然可以！",
        "北京是中国的首都，也是一座历史悠久的城市。",
        "你想了解哪些景点？",
    ),
    (
        "Hmm, that's tricky… The U.K. and the U.S. use different date formats, e.g. 04/05 "
        "means April 5 in the U.S. but May 4 in the U.K. So always write the month out.",
        "Hmm, that's tricky…",
        "The U.K. and the U.S. use different date formats, e.g. 04/05 means April 5 in the "
        "U.S. but May 4 in the U.K.",
        "So always write the month out.",
    ),
    (
        "**Short answer:** yes—but only if you're over 18.\n\n**Longer answer:** the rules "
        "vary by state, so check your local DMV website before you apply.",
        "Short answer: yes—but only if you're over 18.",
        "Longer answer: the rules vary by state, so check your local DMV website before you apply.",
    ),
    (
        "I recommend starting with the official tutorial because it covers the basics in a "
        "very approachable way. After that you can move on to building a small project of "
        "your own.",
        "I recommend starting with the official tutorial because it covers the basics in a "
        "very approachable way.",
        "After that you can move on to building a small project of your own.",
    ),
    (
        "Here are some useful resources:\n\n1. [Python docs](https://docs.python.org/3/) – "
        "the official reference.\n2. [Real Python](https://realpython.com) – tutorials for "
        "all levels.\n",
        "Here are some useful resources:",
        "1. Python docs – the official reference.",
        "2. Real Python – tutorials for all levels.",
    ),
    (
        "The museum, which was founded in 1870 by a group of wealthy collectors who wanted to "
        "bring European art to the city, has grown over the years into one of the largest "
        "institutions of its kind, with more than two million objects spanning five thousand "
        "years of history, from ancient Egyptian sculpture and Greek pottery to modern "
        "paintings, photography and design, and it welcomes around seven million visitors "
        "every year, most of whom come during the summer months when the special exhibitions "
        "open and the gardens are in full bloom.",
        "The museum, which was founded in 1870 by a group of wealthy collectors who wanted to "
        "bring European art to the city,",
        "has grown over the years into one of the largest institutions of its kind, with more "
        "than two million objects spanning five thousand years of history, from ancient "
        "Egyptian sculpture and Greek pottery to modern paintings, photography and design, "
        "and it welcomes around seven million visitors every year,",
        "most of whom come during the summer months when the special exhibitions open and the "
        "gardens are in full bloom.",
    ),
    (
        "Sure. Let me check that for you. Done! Your meeting is now at 3 p.m. tomorrow.",
        "Sure. Let me check that for you.",
        "Done! Your meeting is now at 3 p.m. tomorrow.",
    ),
    (
        "> The best way to predict the future is to invent it.\n\n— Alan Kay\n\n"
        "That quote is often used in tech circles.",
        "The best way to predict the future is to invent it.",
        "— Alan Kay",
        "That quote is often used in tech circles.",
    ),
)
