// A small Ink story for worldloom's tests (compiled with inkjs in tests/test_ink.py).
# title: The Kite
# inventory: kite, leaf
# cast: creature = a small blue creature with a long tail
VAR courage = 0
VAR met = false
VAR mood = "calm"
EXTERNAL give(item, who)
EXTERNAL trust(who)
EXTERNAL relate(who, axis, delta)
EXTERNAL react(who, reaction)
EXTERNAL explode()

-> meadow

=== meadow ===
# scene: meadow at dusk
# show: creature
# music: soft strings
The wind moves through the grass.
Guide: The creature watches you from the grass.
~ met = true
* [Offer the kite] -> kite
* [Offer a leaf] -> leaf
+ [Wait]
  You wait. Its trust is {trust("creature")}.
  -> meadow.settle
= settle
The grass settles.
* [Offer the kite] -> kite

=== kite ===
~ give("kite", "creature")
~ react("creature", "leap")
~ relate("creature", "trust", 0.5)
The creature leaps with delight. # sound: chime
~ courage += 1
-> forest

=== leaf ===
~ give("leaf", "creature")
~ mood = "wary"
The creature sniffs the leaf. Its trust is {trust("creature")}.
-> forest

=== forest ===
# scene: forest at night
# show: creature
# chunk: long
The forest is dark. {courage > 0: You feel brave.}
{~An owl hoots.|A twig snaps.|The wind sighs.|Something rustles.}
* [Go home] -> home
* [Poke the glowing bug] -> bug

=== bug ===
~ explode()
The bug glows.
-> home

=== function on_give(item, who) ===
The {who} turns the {item} over in its paws.
~ relate(who, "affinity", 1)
~ return true

=== home ===
# ending: home
You go home with {courage} courage.
-> END
