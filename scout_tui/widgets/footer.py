"""The key bar at the bottom: Textual's ``Footer``, drawn as one line until the first frame is up.

Each key of Textual's footer is a ``FooterKey`` widget, and mounting the 7 of the first frame
cost ~20 ms of start-up. So the footer first draws those keys itself, cell for cell in the
colours and places Textual gives them, and makes the real keys when the app asks (``show_keys``,
once the first frame is painted); from then on it is Textual's footer, following the bindings.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.app import ComposeResult
from textual.color import Color
from textual.screen import Screen
from textual.strip import Strip
from textual.style import Style
from textual.widgets import Footer, Static

from .. import compat


@dataclass(frozen=True)
class DrawnKey:
    """A key the footer draws itself: its display (``^q``) and description (``Quit``)."""

    display: str
    description: str


class KeysFooter(Footer):
    """``Footer``, same keys, same look: the first frame's keys drawn in one line, then Textual's.

    The line mirrors ``FooterKey`` in a non-compact footer: `` key `` then ``description ``,
    side by side from the left, the command palette's key (compact: ``^p palette``) docked on
    the right behind a ``vkey`` border, and every key's edge cutting the line into segments as
    the compositor cuts it at each widget's edge (tests/test_footer.py compares the two). A
    first frame with what the line does not draw (a group of keys, a disabled key, a compact
    footer) gets Textual's keys at once.
    """

    # The colours of ``FooterKey`` (Textual's DEFAULT_CSS), as components of this footer.
    DEFAULT_CSS = """
    KeysFooter {
        & > .keys-footer--item { background: $footer-item-background; }
        & > .keys-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .keys-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .keys-footer--palette { border-left: vkey $foreground 20%; }
        & > .-hint { width: auto; padding: 0 1; text-wrap: nowrap; color: $text-warning; background: $warning-muted; text-style: bold; }
    }
    """
    COMPONENT_CLASSES = {"keys-footer--item", "keys-footer--key", "keys-footer--description", "keys-footer--palette"}

    def __init__(self) -> None:
        super().__init__()
        # The keys of the first frame, drawn by ``render_line`` until ``show_keys``; None: Textual's.
        self.drawn: tuple[list[DrawnKey], DrawnKey | None] | None = None
        self._first_compose = True
        self._hint = ""  # said before the keys (``say``)
        compat.show_footer_keys_at_once(self)  # keys in the first frame (Footer waits for a change)

    def compose(self) -> ComposeResult:
        if self._first_compose:
            self._first_compose = False
            self.drawn = self._keys_to_draw()
            if self.drawn is not None:
                return
        # Inside the recompose's batch: no frame is drawn between the line going and the keys coming.
        self.drawn = None
        if self._hint:
            yield Static(self._hint, classes="-hint")
        footer_key = compat.footer_key_class()
        for widget in super().compose():
            # Bound to the footer's ``compact`` once mounted, a key made compact (FooterKey's
            # default) is restyled twice more (~4 ms for 7 keys): made with its value at once.
            # The palette's key is not bound to ``compact``: it stays compact, as in Footer.
            if isinstance(widget, footer_key) and not widget.has_class("-command-palette"):
                widget.set_reactive(footer_key.compact, self.compact)
            yield widget

    def say(self, hint: str) -> None:
        """Show ``hint`` (a few words, such as "Press Ctrl+C again to quit") at the footer's
        left, before the keys, until it is said again ("": nothing)."""
        if hint != self._hint:
            self._hint = hint
            self.refresh(recompose=True)

    def show_keys(self) -> None:
        """Make Textual's keys for the current bindings, if the line still stands for them."""
        if self.drawn is not None:
            self.refresh(recompose=True)

    def bindings_changed(self, screen: Screen) -> None:
        if self.drawn is None:  # while the line stands, the keys are made once, by ``show_keys``
            super().bindings_changed(screen)

    def _keys_to_draw(self) -> tuple[list[DrawnKey], DrawnKey | None] | None:
        """The keys ``Footer.compose`` would make now, and the palette's; None if one would not
        look as the line draws it."""
        if self.compact:
            return None
        active_bindings = self.screen.active_bindings
        by_action: defaultdict[str, list] = defaultdict(list)
        for _node, binding, enabled, _tooltip in active_bindings.values():
            if binding.show:
                by_action[binding.action].append((binding, enabled))
        keys = []
        for (binding, enabled), *_ in by_action.values():
            if not enabled or binding.group is not None or not binding.description:
                return None
            keys.append(DrawnKey(self.app.get_key_display(binding), binding.description))
        palette = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, _tooltip = found
                if not enabled or not binding.description:
                    return None
                palette = DrawnKey(self.app.get_key_display(binding), binding.description)
        return keys, palette

    def render_line(self, y: int) -> Strip:
        if self.drawn is None:
            return super().render_line(y)
        return self._line(*self.drawn, self.size.width)

    def _line(self, keys: list[DrawnKey], palette: DrawnKey | None, width: int) -> Strip:
        """The footer's line as the compositor would put it together from the keys' widgets:
        ``width`` cells, cut at every key's edge."""
        _, background = self.background_colors
        item = background + self.get_component_styles("keys-footer--item").background
        key_style, description_style = self._rich_style("keys-footer--key"), self._rich_style("keys-footer--description")
        segments: list[Segment] = []
        edges = {width}

        def at(offset: int) -> RichStyle:  # where a segment starts in its key (Textual's text meta)
            return RichStyle.from_meta({"offset": (offset, 0)})

        x = 0
        for key in keys:  # FooterKey's padding: key "0 1", description "0 1 0 0"
            edges.add(x)
            shown = f" {key.display} "
            segments += [Segment(shown, key_style + at(0)), Segment(f"{key.description} ", description_style + at(cell_len(shown)))]
            x += cell_len(shown) + cell_len(key.description) + 1
        edges.add(x)
        if x < width:  # the footer's own background, where no key is
            segments.append(Segment(" " * (width - x), Style(background=background).rich_style))
        line = Strip(segments).crop(0, width)
        if palette is not None:
            # Compact (padding 0, and "0 0 0 1" before the description), padding-right 1, a
            # vkey border on the left whose colour is laid on the footer's background.
            border = self.get_component_styles("keys-footer--palette").border_left[1]
            inner = Style(background=item)
            drawn = Strip([
                Segment("▏", (inner + Style(foreground=background + border)).rich_style),
                Segment(palette.display, key_style + at(0)),
                Segment(f" {palette.description}", description_style + at(cell_len(palette.display))),
                Segment(" ", inner.rich_style),
            ])
            left = width - drawn.cell_length
            edges.add(max(left, 0))
            line = Strip.join([line.crop(0, max(left, 0)), drawn.crop(max(-left, 0))])
        return Strip.join(line.divide(sorted(edge for edge in edges if 0 < edge <= width)))

    def _rich_style(self, component: str) -> RichStyle:
        """``DOMNode.rich_style`` of ``component`` inside a ``FooterKey`` of this footer: the
        backgrounds of the footer's ancestors, the footer, the key and the component blended."""
        background, color, style, opacity = Color(0, 0, 0, 0), Color(255, 255, 255, 0), RichStyle(), 1.0
        layers = [node.styles for node in reversed(self.ancestors_with_self)]
        layers += [self.get_component_styles("keys-footer--item"), self.get_component_styles(component)]
        for styles in layers:
            opacity *= styles.opacity
            text_background = background
            if styles.has_rule("background"):
                text_background = background + styles.background.tint(styles.background_tint)
                background += styles.background.tint(styles.background_tint).multiply_alpha(opacity)
            if styles.has_rule("color"):
                color = styles.color
            style += styles.text_style
            if styles.has_rule("auto_color") and styles.auto_color:
                color = text_background.get_contrast_text(color.a)
        return style + RichStyle.from_color((background + color).rich_color if (background.a or color.a) else None,
                                            background.rich_color if background.a else None)
