"""Colours of a place: palettes (the land's hues), skies (the time of day) and weather.

:func:`resolve_look` turns a scene's ``palette``, ``time_of_day`` and ``weather``
(plus an optional reference-image tint and prompt keywords) into one frozen
:class:`Look` that the landscape painter, the particles and the sound read.
Colours are RGB tuples in 0..255.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass, replace

from game.world.backends.raster import RGB, desaturate, lerp_rgb, luma, mul_rgb
from game.world.backends.seeds import unit


@dataclass(frozen=True)
class Palette:
    """The hues of a location in neutral daylight.

    Attributes:
        far, near, ground: base colours of the far hills, near hills and the ground.
        grass, tree, accent: grass tips, tree silhouettes, flowers and highlights.
        water: colour of a creek across the ground, or ``None`` for no water.
        trees: tree density (1 = a few per screen).
        time: the time of day this palette names (``day``, ``night``...), or ``""``.
    """

    far: RGB
    near: RGB
    ground: RGB
    grass: RGB
    tree: RGB
    accent: RGB
    water: RGB | None = None
    trees: float = 1.0
    time: str = ""


PALETTES: dict[str, Palette] = {
    "dusk": Palette(
        far=(150, 122, 176),
        near=(96, 88, 138),
        ground=(74, 104, 98),
        grass=(112, 150, 112),
        tree=(58, 62, 100),
        accent=(255, 198, 134),
        time="dusk",
    ),
    "creek": Palette(
        far=(128, 158, 172),
        near=(80, 126, 118),
        ground=(80, 134, 94),
        grass=(122, 174, 104),
        tree=(46, 92, 78),
        accent=(252, 228, 152),
        water=(96, 162, 204),
    ),
    "coast": Palette(  # a rocky shore: grey-blue sea for hills, wet black rock, wrack, no trees
        far=(150, 170, 186),
        near=(70, 98, 122),
        ground=(52, 58, 66),
        grass=(104, 110, 64),
        tree=(40, 48, 58),
        accent=(236, 232, 214),
        water=(92, 128, 156),
        trees=0.0,
    ),
    "hollow": Palette(
        far=(106, 128, 118),
        near=(64, 90, 78),
        ground=(58, 84, 62),
        grass=(88, 124, 78),
        tree=(36, 56, 46),
        accent=(216, 172, 242),
        trees=2.4,
    ),
    "day": Palette(
        far=(142, 180, 206),
        near=(102, 158, 120),
        ground=(114, 174, 90),
        grass=(150, 204, 104),
        tree=(60, 114, 72),
        accent=(255, 238, 122),
        time="day",
    ),
    "night": Palette(
        far=(126, 142, 178),
        near=(88, 104, 136),
        ground=(74, 100, 104),
        grass=(100, 130, 124),
        tree=(54, 66, 96),
        accent=(214, 228, 255),
        time="night",
    ),
}


@dataclass(frozen=True)
class Sky:
    """The sky and light of a time of day.

    Attributes:
        top, mid, horizon: the sky gradient, zenith to horizon.
        light: sun or moon colour; ``light_pos``: its centre as fractions of (width, height);
        light_r: its radius as a fraction of the height (0 = hidden).
        glow: strength of the glow around it, 0..1.
        moon: draw a crescent moon instead of a sun; ``rising``: it sits on the far crest, half
        behind it (the backdrop puts its centre on the crest at its column).
        stars: star density, 0..1.
        cloud_lit, cloud_shade: cloud colours; ``clouds``: cover 0..1;
        streaks: long thin clouds (dusk) instead of puffs.
        grade: multiplier on land colours; ``ambient``: share of the horizon colour added.
        rim: strength of the rim light on hill crests, 0..1.
    """

    top: RGB
    mid: RGB
    horizon: RGB
    light: RGB
    light_pos: tuple[float, float]
    light_r: float
    glow: float
    moon: bool
    stars: float
    cloud_lit: RGB
    cloud_shade: RGB
    clouds: float
    streaks: bool
    grade: RGB
    ambient: float
    rim: float
    rising: bool = False


SKIES: dict[str, Sky] = {
    "day": Sky(
        top=(78, 134, 206),
        mid=(132, 180, 228),
        horizon=(204, 226, 240),
        light=(255, 250, 226),
        light_pos=(0.74, 0.16),
        light_r=0.035,
        glow=0.35,
        moon=False,
        stars=0.0,
        cloud_lit=(255, 255, 255),
        cloud_shade=(196, 208, 226),
        clouds=0.55,
        streaks=False,
        grade=(1.0, 1.0, 1.0),
        ambient=0.05,
        rim=0.25,
    ),
    "dawn": Sky(  # pale dawn light: a washed blue sky, the sun just up over a pale gold horizon
        top=(112, 140, 196),
        mid=(196, 196, 214),
        horizon=(252, 228, 200),
        light=(255, 240, 210),
        light_pos=(0.3, 0.48),
        light_r=0.04,
        glow=0.6,
        moon=False,
        stars=0.0,
        cloud_lit=(255, 222, 204),
        cloud_shade=(170, 160, 186),
        clouds=0.45,
        streaks=True,
        grade=(0.94, 0.9, 0.92),
        ambient=0.12,
        rim=0.45,
    ),
    "golden": Sky(  # the hour before dusk: the sun low and warm over the horizon, no star out yet
        top=(70, 104, 170),
        mid=(150, 160, 196),
        horizon=(250, 206, 150),
        light=(255, 226, 170),
        light_pos=(0.26, 0.42),  # west of the lighthouse the coast scenes place at 0.7
        light_r=0.038,
        glow=0.7,
        moon=False,
        stars=0.0,
        cloud_lit=(255, 214, 170),
        cloud_shade=(150, 140, 170),
        clouds=0.5,
        streaks=True,
        grade=(0.96, 0.88, 0.8),
        ambient=0.14,
        rim=0.55,
    ),
    "dusk": Sky(  # the blue hour: the sun just under the hills, a warm band low in a blue sky
        top=(24, 34, 86),
        mid=(62, 86, 152),
        horizon=(226, 160, 132),
        light=(255, 190, 140),
        light_pos=(0.68, 0.6),
        light_r=0.0,
        glow=0.55,
        moon=False,
        stars=0.2,
        cloud_lit=(214, 150, 156),
        cloud_shade=(64, 72, 126),
        clouds=0.5,
        streaks=True,
        grade=(0.62, 0.68, 0.86),
        ambient=0.14,
        rim=0.45,
    ),
    "night": Sky(
        top=(6, 8, 26),
        mid=(16, 24, 58),
        horizon=(40, 54, 98),
        light=(236, 236, 218),
        light_pos=(0.76, 0.2),
        light_r=0.034,
        glow=0.3,
        moon=True,
        stars=1.0,
        cloud_lit=(74, 84, 124),
        cloud_shade=(30, 36, 66),
        clouds=0.3,
        streaks=True,
        grade=(0.22, 0.27, 0.44),
        ambient=0.1,
        rim=0.2,
    ),
}

TIME_ALIASES: dict[str, str] = {
    "noon": "day",
    "afternoon": "golden",
    "late afternoon": "golden",
    "golden hour": "golden",
    "before dusk": "golden",
    "an hour before dusk": "golden",
    "before sunset": "golden",
    "morning": "dawn",
    "sunrise": "dawn",
    "evening": "dusk",
    "sunset": "dusk",
    "twilight": "dusk",
    "midnight": "night",
}

WEATHER_ALIASES: dict[str, str] = {
    "drizzle": "rain",
    "storm": "rain",
    "rainy": "rain",
    "mist": "fog",
    "misty": "fog",
    "foggy": "fog",
    "snowy": "snow",
    "sunny": "clear",
}


@dataclass(frozen=True)
class Look:
    """Everything colour-related the painter needs for one scene.

    Attributes:
        time: resolved time of day (``day``, ``dawn``, ``dusk``, ``night``).
        weather: resolved weather (``clear``, ``rain``, ``fog``, ``snow``).
        sky: the sky after weather.
        far, near, ground: graded land colours (before per-layer fog).
        grass, tree, accent, water: graded detail colours (``water`` may be ``None``).
        rim: rim-light colour on crests; ``haze``: the colour valleys fade to.
        fog_colour: what fog fades to; ``fog``, ``rain``, ``snow``: strengths 0..1+.
        trees: tree density.
        fireflies: whether fireflies drift over the grass.
        petals: colour of drifting petals/leaves, or ``None``.
    """

    time: str
    weather: str
    sky: Sky
    far: RGB
    near: RGB
    ground: RGB
    grass: RGB
    tree: RGB
    accent: RGB
    water: RGB | None
    rim: RGB
    haze: RGB
    fog_colour: RGB
    fog: float
    rain: float
    snow: float
    trees: float
    fireflies: bool
    petals: RGB | None


def palette_for(name: str) -> Palette:
    """The named palette, or one derived from a hash of the name (any name draws something)."""
    if name in PALETTES:
        return PALETTES[name]
    hue = unit("palette", name)

    def hsv(dh: float, s: float, v: float) -> RGB:
        r, g, b = colorsys.hsv_to_rgb((hue + dh) % 1.0, s, v)
        return (r * 255.0, g * 255.0, b * 255.0)

    return Palette(
        far=hsv(0.0, 0.22, 0.72),
        near=hsv(0.03, 0.32, 0.56),
        ground=hsv(0.08, 0.38, 0.52),
        grass=hsv(0.08, 0.42, 0.68),
        tree=hsv(-0.02, 0.4, 0.36),
        accent=hsv(0.5, 0.5, 0.98),
        trees=0.5 + 1.5 * unit("trees", name),
    )


def resolve_time(time_of_day: str, palette: Palette) -> str:
    """The time of day to draw: the scene's, unless it is the default ``dusk`` and the
    palette names another time (a ``night`` palette is night)."""
    said = " ".join(time_of_day.lower().replace("-", " ").split())
    time = TIME_ALIASES.get(said, said)
    if time not in SKIES:
        time = "dusk"
    if time == "dusk" and palette.time in SKIES:
        time = palette.time
    return time


#: The light a story (or a world edit) lit: its colour, and how far it pulls the land, the
#: rim light and the grade of what stands in it (characters) toward that colour.
LIGHTS: dict[str, tuple[RGB, float]] = {
    "lantern": ((255.0, 190.0, 110.0), 0.24), "firelight": ((255.0, 146.0, 76.0), 0.3),
    "candle": ((255.0, 200.0, 130.0), 0.18), "glow": ((255.0, 208.0, 150.0), 0.16),
    "bright": ((255.0, 252.0, 240.0), 0.22), "dim": ((36.0, 38.0, 48.0), 0.25),
    "moonlight": ((172.0, 194.0, 238.0), 0.24), "moonrise": ((172.0, 194.0, 238.0), 0.12),
}


#: Where the moon is for a light the story set at night: ``(centre as shares of (width, height),
#: radius as a share of the height)``. Rising (``moonrise``) it sits on the far hills' crest, half
#: behind them; once it "clears the hill" (``moonlight``) it hangs just above them; ``moonless``
#: (a night before the story's moonrise) has none. Any other night has the sky's own high moon.
MOON_AT: dict[str, tuple[tuple[float, float], float]] = {
    "moonrise": ((0.74, 0.47), 0.042), "moonlight": ((0.72, 0.3), 0.036), "moonless": ((0.74, 0.6), 0.0),
}


def resolve_look(
    palette_name: str,
    time_of_day: str,
    weather: str,
    prompt: str = "",
    tint: RGB | None = None,
    light: str = "",
) -> Look:
    """Resolve a scene's palette, time and weather into a :class:`Look`.

    Args:
        palette_name: the scene's palette (unknown names get a hashed palette).
        time_of_day: the scene's time of day (aliases such as ``sunset`` accepted).
        weather: the scene's weather (unknown weather draws as ``clear``).
        prompt: the text prompt; ``fireflies``, ``petals``/``blossom`` and
            ``leaves``/``autumn`` add drifting particles.
        tint: mean colour of the reference images, pulled into the land and sky.
        light: the light lit (``lantern``, ``moonlight``...; see :data:`LIGHTS`; others none).
    """
    pal = palette_for(palette_name)
    time = resolve_time(time_of_day, pal)
    sky = SKIES[time]
    wx = WEATHER_ALIASES.get(weather.lower(), weather.lower())
    wx = wx if wx in ("rain", "fog", "snow") else "clear"
    words = prompt.lower()

    def grade(c: RGB) -> RGB:
        g = mul_rgb(c, sky.grade)
        return lerp_rgb(g, sky.horizon, sky.ambient)

    far, near, ground = grade(pal.far), grade(pal.near), grade(pal.ground)
    grass, tree, accent = grade(pal.grass), grade(pal.tree), pal.accent
    water = grade(pal.water) if pal.water is not None else None
    if time == "night":
        accent = lerp_rgb(accent, sky.horizon, 0.5)
    rim = lerp_rgb(sky.light, sky.horizon, 0.35)
    haze = sky.horizon
    if tint is not None:
        far, near, ground = (lerp_rgb(c, tint, 0.18) for c in (far, near, ground))
        sky = replace(sky, mid=lerp_rgb(sky.mid, tint, 0.12), horizon=lerp_rgb(sky.horizon, tint, 0.1))
    fog = rain = snow = 0.0
    grey = luma(sky.horizon)
    fog_colour = lerp_rgb(sky.horizon, (grey, grey, grey + 6.0), 0.6)
    if wx == "rain":
        rain = 1.3 if weather.lower() == "storm" else (0.5 if weather.lower() == "drizzle" else 1.0)
        sky = replace(
            sky,
            top=lerp_rgb(desaturate(sky.top, 0.7), (90, 96, 108), 0.35),
            mid=lerp_rgb(desaturate(sky.mid, 0.75), (120, 126, 138), 0.4),
            horizon=lerp_rgb(desaturate(sky.horizon, 0.7), (150, 156, 166), 0.35),
            light_r=0.0,
            glow=sky.glow * 0.25,
            stars=0.0,
            cloud_lit=desaturate(sky.cloud_lit, 0.7),
            cloud_shade=desaturate(sky.cloud_shade, 0.7),
            clouds=1.0,
            streaks=False,
            rim=sky.rim * 0.3,
        )
        far, near, ground, grass, tree = (
            mul_rgb(desaturate(c, 0.35), (0.82, 0.84, 0.88)) for c in (far, near, ground, grass, tree)
        )
        haze = sky.horizon
    elif wx == "fog":
        fog = 1.0
        sky = replace(
            sky,
            top=lerp_rgb(sky.top, fog_colour, 0.4),
            mid=lerp_rgb(sky.mid, fog_colour, 0.55),
            horizon=lerp_rgb(sky.horizon, fog_colour, 0.75),
            glow=sky.glow * 0.6,
            stars=sky.stars * 0.2,
            clouds=sky.clouds * 0.5,
        )
        haze = fog_colour
    elif wx == "snow":
        snow = 1.0
        sky = replace(
            sky,
            top=lerp_rgb(sky.top, (grey * 0.8, grey * 0.8, grey * 0.86), 0.5),
            mid=lerp_rgb(sky.mid, (grey, grey, grey * 1.04), 0.5),
            horizon=lerp_rgb(sky.horizon, (grey * 1.1, grey * 1.1, grey * 1.14), 0.5),
            light_r=sky.light_r * 0.6,
            stars=sky.stars * 0.3,
            clouds=0.8,
            streaks=False,
        )
        haze = sky.horizon
    moon = MOON_AT.get(light.lower())
    if sky.moon and moon is not None:  # the moon's place in the night the story is at
        sky = replace(sky, light_pos=moon[0], light_r=moon[1] if sky.light_r > 0 else 0.0,
                      glow=sky.glow * (1.0 if moon[1] else 0.3), rising=light.lower() == "moonrise")
    lit = LIGHTS.get(light.lower())
    if lit is not None:
        colour, share = lit
        near, ground, grass, tree = (lerp_rgb(c, mul_rgb(colour, (luma(c) / 255.0 + 0.25,) * 3), share)
                                     for c in (near, ground, grass, tree))
        rim = lerp_rgb(rim, colour, 0.6)
        sky = replace(sky, grade=lerp_rgb(sky.grade, (colour[0] / 255.0, colour[1] / 255.0, colour[2] / 255.0),
                                          share))
    fireflies = "firefl" in words or (time in ("dusk", "night") and wx in ("clear", "fog"))
    petals: RGB | None = None
    if "petal" in words or "blossom" in words:
        petals = (250, 196, 214)
    elif "leaves" in words or "autumn" in words:
        petals = (226, 140, 60)
    return Look(
        time=time,
        weather=wx,
        sky=sky,
        far=far,
        near=near,
        ground=ground,
        grass=grass,
        tree=tree,
        accent=accent,
        water=water,
        rim=rim,
        haze=haze,
        fog_colour=fog_colour,
        fog=fog,
        rain=rain,
        snow=snow,
        trees=pal.trees,
        fireflies=fireflies,
        petals=petals,
    )
