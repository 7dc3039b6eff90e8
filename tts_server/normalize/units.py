"""Units read after a number: the written symbol → (singular, plural). Case matters: "MB"
is megabytes, "Mb" megabits, "m" meters and "M" (a scale, elsewhere) million."""

from __future__ import annotations


def _units(table: str) -> dict[str, tuple[str, str]]:
    """``"km kilometer kilometers; ..."``: a symbol, its singular and its plural, per entry."""
    units = {}
    for entry in table.split(";"):
        symbol, singular, plural = entry.split()
        units[symbol] = (singular.replace("_", " "), plural.replace("_", " "))
    return units


UNITS = _units(
    "mm millimeter millimeters; cm centimeter centimeters; m meter meters; km kilometer kilometers;"
    "in inch inches; ft foot feet; yd yard yards; mi mile miles; nm nanometer nanometers;"
    "µm micrometer micrometers; um micrometer micrometers;"
    "mg milligram milligrams; g gram grams; kg kilogram kilograms; oz ounce ounces;"
    "lb pound pounds; lbs pound pounds; t tonne tonnes;"
    "ml milliliter milliliters; mL milliliter milliliters; l liter liters; L liter liters;"
    "gal gallon gallons; qt quart quarts; tsp teaspoon teaspoons; tbsp tablespoon tablespoons;"
    "ms millisecond milliseconds; s second seconds; sec second seconds; secs second seconds;"
    "min minute minutes; mins minute minutes; h hour hours; hr hour hours; hrs hour hours;"
    "mph mile_per_hour miles_per_hour; kph kilometer_per_hour kilometers_per_hour;"
    "km/h kilometer_per_hour kilometers_per_hour; m/s meter_per_second meters_per_second;"
    "mpg mile_per_gallon miles_per_gallon; rpm revolution_per_minute revolutions_per_minute;"
    "fps frame_per_second frames_per_second;"
    "Hz hertz hertz; kHz kilohertz kilohertz; MHz megahertz megahertz; GHz gigahertz gigahertz;"
    "W watt watts; kW kilowatt kilowatts; MW megawatt megawatts; kWh kilowatt_hour kilowatt_hours;"
    "V volt volts; mA milliamp milliamps; mAh milliamp_hour milliamp_hours; A amp amps;"
    "B byte bytes; KB kilobyte kilobytes; kB kilobyte kilobytes; MB megabyte megabytes;"
    "GB gigabyte gigabytes; TB terabyte terabytes; PB petabyte petabytes;"
    "Kb kilobit kilobits; Mb megabit megabits; Gb gigabit gigabits;"
    "bps bit_per_second bits_per_second; kbps kilobit_per_second kilobits_per_second;"
    "Mbps megabit_per_second megabits_per_second; Gbps gigabit_per_second gigabits_per_second;"
    "px pixel pixels; dB decibel decibels; ppm part_per_million parts_per_million;"
    "°C degree_Celsius degrees_Celsius; °F degree_Fahrenheit degrees_Fahrenheit;"
    "° degree degrees; K kelvin kelvin; cal calorie calories; kcal kilocalorie kilocalories;"
    "ac acre acres; ha hectare hectares"
)
# Units that may stand as a word of their own after the number ("5 km"): not those that are
# also common words or letters ("5 in a row", "grade 5 A").
SPACED = frozenset(UNITS) - {"in", "A", "B", "K", "t", "s", "V", "W"}
