"""Text normalization before G2P: what a voice should say for numbers, money, times, dates,
units, phone numbers, web addresses, symbols, Roman numerals and abbreviations, with a map
from the spoken words back to the written text (so word timings can name what was written).

Pure and fast: no I/O, no model; num2words for the number words. See docs/normalization.md.
"""

from tts_server.normalize.context import Options
from tts_server.normalize.normalizer import Normalized, Replacement, normalize

__all__ = ["Normalized", "Options", "Replacement", "normalize"]
