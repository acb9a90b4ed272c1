"""Held-out translation pairs: each side unique in the file, the same draw for a seed, and every pair sharing a
sentence with them dropped from training."""
import pytest

from sentence_lab.text.held_out import hold_out, normalise, without_held_out

# Tatoeba's shape: one source with several translations, one translation of several sources, exact and case repeats
PAIRS = [("Go.", "Va !"), ("Go.", "Marche."), ("Hi.", "Salut !"), ("Hello.", "Salut !"), ("I see.", "Je vois."),
         ("i  see.", "je vois."), ("Run!", "Cours !"), ("Wait.", "Attends."), ("Stop.", "Arrête."),
         ("Help!", "À l'aide !"), ("Thanks.", "Merci."), ("Come in.", "Entre.")]
UNIQUE_BOTH_SIDES = {("I see.", "Je vois."), ("Run!", "Cours !"), ("Wait.", "Attends."), ("Stop.", "Arrête."),
                     ("Help!", "À l'aide !"), ("Thanks.", "Merci."), ("Come in.", "Entre.")}


def test_held_out_pairs_have_both_sides_unique_and_one_draw_per_seed():
    held = hold_out(PAIRS, 4, seed=1)
    assert held.unique_pairs == 11 and held.candidates == 7  # "i  see." is "I see." again
    assert set(held.pairs) <= UNIQUE_BOTH_SIDES and len(set(held.pairs)) == 4
    assert [p for p in PAIRS if p in held.pairs] == held.pairs  # the file's order
    assert hold_out(PAIRS, 4, seed=1) == held
    draws = {tuple(hold_out(PAIRS, 4, seed=s).pairs) for s in range(20)}
    assert len(draws) > 1


def test_training_drops_every_pair_sharing_a_sentence_with_the_held_out_ones():
    held = hold_out(PAIRS, 7, seed=3)  # every candidate
    training = PAIRS + [("I SEE.", "Compris."), ("Got it.", "Je  vois."), ("Go.", "Va !")]
    kept = without_held_out(training, held)
    assert kept == [("Go.", "Va !"), ("Go.", "Marche."), ("Hi.", "Salut !"), ("Hello.", "Salut !"), ("Go.", "Va !")]
    assert not any(normalise(a) in held.sources or normalise(b) in held.targets for a, b in kept)


def test_too_few_unique_pairs_is_one_line():
    with pytest.raises(ValueError, match="only 7 pairs have both sides unique, against 8 to hold out"):
        hold_out(PAIRS, 8, seed=1)
