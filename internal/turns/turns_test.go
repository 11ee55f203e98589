package turns

import (
	"slices"
	"strings"
	"testing"
)

// The same run, step and round give the same order; over many rounds every arm goes first
// about as often as the others, and each round's order is a permutation of the arms.
func TestOrderIsAFreshPermutationEveryRoundAndRepeatable(t *testing.T) {
	arms := []string{"a", "b", "c"}
	first := map[string]int{}
	orders := map[string]bool{}
	const rounds = 3000
	for round := range rounds {
		o := Order("run1", "index", round, arms)
		if again := Order("run1", "index", round, arms); !slices.Equal(o, again) {
			t.Fatalf("round %d: %v, then %v", round, o, again)
		}
		if sorted := slices.Sorted(slices.Values(o)); !slices.Equal(sorted, arms) {
			t.Fatalf("round %d: %v is not a permutation of %v", round, o, arms)
		}
		first[o[0]]++
		orders[strings.Join(o, "")] = true
	}
	for _, a := range arms {
		// Each arm is first in a third of the rounds: 1000 ± 4.5 standard deviations.
		if n := first[a]; n < 880 || n > 1120 {
			t.Errorf("arm %s went first in %d of %d rounds, want about %d", a, n, rounds, rounds/3)
		}
	}
	if len(orders) != 6 {
		t.Errorf("%d of the 6 orders of 3 arms were drawn", len(orders))
	}
	if slices.Equal(Order("run1", "index", 1, arms), Order("run2", "index", 1, arms)) &&
		slices.Equal(Order("run1", "index", 2, arms), Order("run2", "index", 2, arms)) &&
		slices.Equal(Order("run1", "index", 3, arms), Order("run2", "index", 3, arms)) {
		t.Error("two runs drew the same orders three rounds running")
	}
	if o := Order("run1", "index", 0, arms); !slices.Equal(arms, []string{"a", "b", "c"}) || len(o) != 3 {
		t.Error("Order changed its argument")
	}
}
