// worldloom's own test story for Ink's functions, tunnels and threads (compiled with inkjs in the tests).
# title: The Crossing
VAR coins = 0
VAR ferry_paid = false

-> dock

=== function pay(ref purse, amount)
~ purse = purse - amount

=== function add(ref x)
~ x = x + 1

=== dock ===
# scene: river dock at dawn
The ferry waits at the dock.
-> ferryman_greets ->
<- harbour_chatter
* [Board the ferry # id: board]
  ~ pay(coins, 1)
  ~ ferry_paid = true
  -> crossing
* [Count your {coins} coin(s) # id: count]
  ~ add(coins)
  -> dock
* [Row into the whirlpool] -> whirlpool
+ [Wait for the tide]
  -> tide

=== ferryman_greets ===
Ferryman: Two coins for the crossing. # id: greeting
{ coins < 1:
  ~ add(coins)
  He presses a coin into your hand.
}
->->

=== harbour_chatter ===
* [Listen to the gulls]
  The gulls argue over a fish.
  -> dock
-> DONE

=== tide ===
The tide turns.
-> END

=== crossing ===
# ending: far shore
You cross the river.
-> END

=== whirlpool ===
The water spins you round.
+ [Row harder] -> whirlpool
