"""The answer widgets, driven as a student would: right answer, wrong answer (hint, answer hidden), reveal,
and the jslinks that make multiple choice and sliders work without a kernel."""

import ipywidgets
import pytest
from ipywidgets.embed import embed_data

from widgets import Choice, NumberQuestion, Quiz, SliderQuestion

DEVICES = ["CPU:0", "GPU:0", "GPU:1"]
HINT = "look at the placement log"


def choice(**kwargs):
    args = dict(question="Where does c run?", options=DEVICES, answer="GPU:1", hint=HINT, explain="its input is there")
    return Choice(**{**args, **kwargs})


def assert_linked(question):
    """The control's index drives the feedback stack's selected_index through one jslink (a browser-side
    link), and the link is in the state a static export saves."""
    [link] = question.links
    assert isinstance(link, ipywidgets.widgets.widget_link.Link)
    assert link.source == (question.control, "index") and link.target == (question.feedback, "selected_index")
    state = embed_data(views=[question])["manager_state"]["state"]
    saved = state[link.model_id]["state"]
    assert saved["source"] == [f"IPY_MODEL_{question.control.model_id}", "index"]
    assert saved["target"] == [f"IPY_MODEL_{question.feedback.model_id}", "selected_index"]


def test_choice_right_answer_says_right_and_explains():
    q = choice()
    q.control.value = "GPU:1"
    assert q.is_right and q.check() == "✓ Right. its input is there"
    assert q.check_bar.selected_index == 0 and q.answer_bar.selected_index is None


def test_choice_wrong_answer_gives_the_hint_and_hides_the_answer():
    q = choice(hints={"CPU:0": "the CPU runs only ops without a GPU kernel"})
    q.control.value = "GPU:0"
    feedback = q.check()
    assert not q.is_right
    assert feedback == f"✗ Not this one. Hint: {HINT}" and "GPU:1" not in feedback
    assert q.answer_bar.selected_index is None  # Show answer stays closed
    q.control.value = "CPU:0"
    assert q.feedback_text() == "✗ Not this one. Hint: the CPU runs only ops without a GPU kernel"


def test_choice_reveals_the_answer_only_on_request():
    q = choice()
    assert q.control.index is None and q.feedback_text() == ""  # nothing picked, nothing checked
    assert q.answer_bar.selected_index is None
    assert q.show_answer() == "Answer: GPU:1. its input is there"
    assert q.answer_bar.selected_index == 0


def test_choice_feedback_panes_follow_the_options_through_a_jslink():
    q = choice(buttons="toggle")
    assert isinstance(q.control, ipywidgets.ToggleButtons)
    assert_linked(q)
    texts = [pane.value for pane in q.feedback.children]
    assert len(texts) == 3 and "Right." in texts[2] and all("Hint:" in t and "Right" not in t for t in texts[:2])


def test_choice_answer_may_be_computed_by_a_callable():
    q = choice(answer=lambda: DEVICES[0])
    assert q.answer_index == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(answer="GPU:7"), "is not one of the options"),
    (dict(options=["GPU:1"]), "at least two options"),
    (dict(options=["GPU:1", "GPU:1", "CPU:0"]), "distinct labels"),
    (dict(hint="it is GPU:1, its input's device"), "contains the answer"),
    (dict(hints={"CPU:0": "not the CPU: GPU:1"}), "contains the answer"),
])
def test_choice_rejects_bad_questions(kwargs, message):
    with pytest.raises(ValueError, match=message):
        choice(**kwargs)


def test_hint_check_matches_whole_words_only():
    q = choice(options=["1", "2", "3"], answer="2", hint="look at GPU:12 and the 2.5 ms step")
    assert q.answer_index == 1  # "2" occurs only inside "GPU:12" and "2.5": not the answer given away


def slider(**kwargs):
    args = dict(question="How long is the step?", values=[1, 2, 5, 10, 20], answer=4.2, hint="bytes / bandwidth",
                unit="ms", explain="4 MB at 1 GB/s")
    return SliderQuestion(**{**args, **kwargs})


def test_slider_says_too_low_or_too_high_with_the_hint_and_right_at_the_nearest_value():
    q = slider()
    assert q.answer_index == 2  # 5 is the grid value nearest 4.2
    q.control.index = 1
    assert q.check() == "✗ You chose 2 ms: too low. Hint: bytes / bandwidth"
    q.control.index = 4
    assert q.feedback_text() == "✗ You chose 20 ms: too high. Hint: bytes / bandwidth"
    assert q.answer_bar.selected_index is None
    q.control.value = "5 ms"
    assert q.is_right and q.feedback_text() == "✓ Right. 4 MB at 1 GB/s"
    assert q.show_answer() == "Answer: 5 ms. 4 MB at 1 GB/s"


def test_slider_panes_differ_between_neighbouring_values_and_name_the_value():
    # two values below the answer and two above: without the value in the pane, 1→2 and 10→20 would show the same
    q = slider(label="{:g}".format, unit="")
    texts = []
    for index, value in enumerate([1, 2, 5, 10, 20]):
        q.control.index = index
        texts.append(q.feedback_text())
        assert (f"You chose {value}:" in texts[-1]) == (value != 5)
    assert all(a != b for a, b in zip(texts, texts[1:]))
    assert repr(q) == "<SliderQuestion: 'How long is the step?', 5 values>"


def test_slider_feedback_is_jslinked():
    assert_linked(slider())


@pytest.mark.parametrize("kwargs, message", [
    (dict(answer=25), "outside the slider's range"),
    (dict(values=[1, 5, 2]), "increasing"),
    (dict(hint="about 5 ms"), "contains the answer"),
    (dict(hint="about 5 milliseconds"), "contains the answer"),  # the value, whatever the unit
])
def test_slider_rejects_bad_questions(kwargs, message):
    with pytest.raises(ValueError, match=message):
        slider(**kwargs)


def number(**kwargs):
    args = dict(question="How many bytes cross?", answer=lambda: 524296, hint="count the _Recv nodes",
                unit="bytes", explain="one pair per tensor and device")
    return NumberQuestion(**{**args, **kwargs})


def test_number_question_right_within_tolerance_wrong_with_the_hint():
    q = number()
    assert "running kernel" in q.check()  # nothing typed yet
    q.control.value = 1000.0
    assert q.check() == "✗ Too low. Hint: count the _Recv nodes" and not q.is_right
    q.control.value = 2e6
    assert q.feedback_text() == "✗ Too high. Hint: count the _Recv nodes"
    assert q.answer_bar.selected_index is None
    q.control.value = 524296 * 1.01  # within the default 2 %
    assert q.is_right and q.feedback_text() == "✓ Right. one pair per tensor and device"
    q.control.value = 524296 * 1.03
    assert not q.is_right
    assert q.show_answer() == "Answer: 524296 bytes. one pair per tensor and device"


def test_number_question_rejects_an_infinite_answer_and_a_telling_hint():
    with pytest.raises(ValueError, match="finite"):
        number(answer=float("nan"))
    with pytest.raises(ValueError, match="contains the answer"):
        number(hint="it is 524296")


def test_reprs_are_stable_text():
    long = "Which device runs the product when both of its inputs live on different GPUs?"
    assert repr(choice()) == "<Choice: 'Where does c run?', 3 options>"
    assert repr(choice(question=long)) == f"<Choice: {long[:47] + '...'!r}, 3 options>"
    assert repr(slider()) == "<SliderQuestion: 'How long is the step?', 5 values>"
    assert repr(number()) == "<NumberQuestion: 'How many bytes cross?'>"


def test_quiz_shows_its_questions_in_order_and_rejects_anything_else():
    questions = (choice(), slider())
    quiz = Quiz(*questions)
    assert quiz.children == questions and repr(quiz) == "<Quiz: 2 questions>"
    with pytest.raises(TypeError, match="got \\['str'\\]"):
        Quiz(choice(), "GPU:1")
    with pytest.raises(TypeError, match="got none"):
        Quiz()
