"""What a theme looks like, resolved: scout-tui's variables derived from a theme's colours and
kept legible, and the WCAG contrast maths that checks them (pure functions over Textual colours).
"""

from __future__ import annotations

from textual.color import Color
from textual.theme import Theme

from scout_tui.theming.themes import ALPHA_SUFFIX, SYNTAX_STYLE


def derive_variables(theme: Theme) -> dict[str, str]:
    """scout-tui's variables for a theme that does not set them: from its colour system, kept
    legible (text colours reach a WCAG contrast of 4.5 on the chat's surface, message
    backgrounds keep the foreground at 4.5). Shape: ``{"tool-ok": "#87d787", ...}``."""
    if theme.ansi:
        return {
            "user-message-background": "transparent", "assistant-message-background": "transparent",
            "tool-running": "ansi_yellow", "tool-ok": "ansi_green", "tool-error": "ansi_red",
            "diff-added": "ansi_green", "diff-removed": "ansi_red",
            "tree-current": "ansi_blue", "tree-fork": "ansi_magenta",
            SYNTAX_STYLE: "ansi_dark" if theme.dark else "ansi_light",
        }
    base = theme.to_color_system().generate()
    background = Color.parse(base["background"])
    surface = resolve_colour(base["surface"], background)
    foreground = resolve_colour(base["foreground"], surface)

    def legible(name: str, under: Color, minimum: float = 4.5) -> str:
        colour = resolve_colour(base[name], under)
        for step in range(11):  # mix toward the foreground until it reads
            mixed = colour.blend(foreground, step / 10)
            if contrast_ratio(mixed, under) >= minimum:
                return mixed.hex
        return foreground.hex

    def tinted(under: Color, tint: str, amount: float) -> str:
        tint_colour = Color.parse(base[tint])
        for factor in (amount, amount * 2 / 3, amount / 3, 0.0):  # fade the tint until text reads
            colour = under.blend(tint_colour, factor)
            if contrast_ratio(foreground, colour) >= 4.5:
                return colour.hex
        return under.hex

    return {
        "user-message-background": tinted(surface, "primary", 0.12),
        "assistant-message-background": surface.hex,
        "tool-running": legible("warning", surface),
        "tool-ok": legible("success", surface),
        "tool-error": legible("error", surface),
        "diff-added": tinted(background, "success", 0.2),
        "diff-removed": tinted(background, "error", 0.2),
        "tree-current": legible("primary", surface),
        "tree-fork": legible("secondary", surface),
        SYNTAX_STYLE: "monokai" if theme.dark else "default",
    }


def css_variables(theme: Theme) -> dict[str, str]:
    """The CSS variables the app uses for ``theme``, merged as ``App.get_css_variables`` does:
    scout-tui's derived defaults < Textual's colour system < the theme's own ``variables``."""
    return {**derive_variables(theme), **theme.to_color_system().generate(), **theme.variables}


def resolve_colour(value: str, under: Color) -> Color:
    """The opaque colour a CSS colour value shows over ``under``: alpha (``rgba()``, ``50%``)
    blended, ``auto`` as Textual's contrast text, ``transparent`` as ``under`` itself.

    Raises:
        ColorParseError: ``value`` is not a colour.
    """
    text = value.strip()
    alpha = 1.0
    if match := ALPHA_SUFFIX.fullmatch(text):
        text, alpha = match[1], float(match[2]) / 100
    colour = under.get_contrast_text(1.0) if text == "auto" else Color.parse(text)
    colour = colour.multiply_alpha(alpha)
    return under + colour if colour.a < 1 else colour


def relative_luminance(colour: Color) -> float:
    """WCAG 2.x relative luminance of an sRGB colour, 0 (black) to 1 (white).

    Source: https://www.w3.org/TR/WCAG22/#dfn-relative-luminance (the 0.04045 threshold of
    IEC 61966-2-1; WCAG's 0.03928 gives the same result for 8-bit channels).
    """

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.r) + 0.7152 * linear(colour.g) + 0.0722 * linear(colour.b)


def contrast_ratio(a: Color, b: Color) -> float:
    """WCAG 2.x contrast ratio of two opaque colours, 1 to 21 (text needs 4.5, AA).

    Source: https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio
    """
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)
