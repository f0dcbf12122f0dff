// worldloom's own test story for the Ink interpreter's lockstep test against bink: one of
// each thing the interpreter plays (compiled with inkjs in the tests).
# title: Features
# author: worldloom tests
VAR gold = 3
VAR ratio = 0.5
VAR name = "Ada"
VAR next_stop = -> market
VAR flag = false
CONST LIMIT = 4

-> start

=== function double(x)
~ return x * 2

=== function describe(ref amount)
~ amount = amount + 1
{amount > LIMIT: plenty|a few} coins

=== function sing()
La <>
la.

=== start ===
# scene: town square
Hello, {name}. You carry {gold} gold and a ratio of {ratio * 3}.
~ temp local = double(gold)
Double is {local}; {gold / 2} and {gold % 2} and {7.0 / 2} and {-7 / 2} and {-7 % 3}.
We <>
glue <>
together.
{sing()}
You have {describe(gold)} now.
{gold > 3 and not flag: Rich and free.|Poor or bound.}
{~Rain falls.|Sun shines.|Wind blows.} {&One|Two|Three} {!Once|Twice} {stopping: First|Then|Always}
The roll is {RANDOM(1, 6)}. Turn {TURNS()}. Choices {CHOICE_COUNT()}.
<- side_thread
* (ask) [Ask about the {name} name # topic: names]
  You ask. # asked
  -> tunnel_trip ->
  -> hub
* {gold > 2} Buy[ a map] for two gold.
  ~ gold -= 2
  -> hub
+ [Go to {next_stop}]
  -> next_stop
* ->
  Nothing else to do.
  -> hub

=== side_thread ===
* [Look at the fountain]
  The fountain gurgles.
  -> hub
- -> DONE

=== tunnel_trip ===
A short detour{gold > 1:, with coins jingling}.
{ start.ask > 0:
  - true: You asked first.
}
->->

=== hub ===
= top
{TURNS() > 2: Time has passed.} You are at the hub ({top} visits).
~ flag = !flag
{ flag:
  - true: Flag up.
  - else: Flag down.
}
{name + " at " + "the hub" == "Ada at the hub": The names agree.}
{name ? "d": It has a d.}
~ temp count = 0
- (loop)
~ count++
{count < 3: -> loop}
Counted {count}.
+ [Back to the start] -> start
+ [Market] -> market
* [Away] -> away
* {hub > 3} [Leave for good] -> finale
+ [Float]
  ~ ratio = ratio + 0.25
  Ratio {ratio}, floor {FLOOR(ratio)}, int {INT(ratio * 10)}, max {MAX(2, 3.5)}.
  -> hub.top
* ->
  -> finale

=== market ===
The market hums. {market > 1: Again.}
~ next_stop = -> away
+ [Barter] -> hub
+ [Leave] -> away

=== away ===
= road
The road {~winds|bends|climbs}.
* [Rest] -> away.camp
+ [Return] -> hub
= camp
You make camp. # mood: calm
+ [Sleep] -> hub
* [Wake] -> finale

=== finale ===
# ending: done
It ends with {gold} gold.
-> END
