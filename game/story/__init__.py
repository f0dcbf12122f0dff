"""The story room: format, loader, safe expressions, runtime, lint."""

from game.story.loader import load_story, story_from_dict
from game.story.story import Story

__all__ = ["Story", "load_story", "story_from_dict"]
