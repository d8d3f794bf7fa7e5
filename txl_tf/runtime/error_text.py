"""`one_line`: another library's error message as one line, nothing cut off mid-sentence.

Keras and TensorFlow messages span lines ("... Example error message for object <...>:", a blank
line, then the cause); their first line alone can end before the cause. The lines are joined
instead, and only a message too long for one line is shortened, at its end.
"""


def one_line(message, limit: int = 400) -> str:
    """`message` (any object; its str) with its lines joined by spaces, at most `limit` chars.

    Example:
      >>> one_line("could not load object <X>:\\n\\nshape (2,) != (3,)\\n")
      'could not load object <X>: shape (2,) != (3,)'
    """
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
