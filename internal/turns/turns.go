// Package turns decides the order in which a benchmark's arms take their turns in each round
// of a step: a fresh random order every round (Randomized Multiple Interleaved Trials, Abedi
// and Brecht, ICPE 2017), so that neither a drift of the machine within a round nor a fixed
// position (always first, after the other arm's warm caches) favours an arm. The order is
// drawn from the run id, the step and the round, so that the runner, which takes the turns,
// and the operator, which creates the k6 Jobs turn by turn over many reconciles, draw the
// same order, and a run can be told again from its id.
package turns

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Key names a run for Order: its run id, or when a run by hand without one started.
func Key(runID string, started time.Time) string {
	if runID != "" {
		return runID
	}
	return started.UTC().Format(time.RFC3339Nano)
}

// Order is the arms' order in one round of a step of the run runID.
func Order(runID, step string, round int, arms []string) []string {
	h := fnv.New64a()
	for _, part := range []string{runID, step, strconv.Itoa(round)} {
		_, _ = h.Write([]byte(part))
		_, _ = h.Write([]byte{0})
	}
	order := slices.Clone(arms)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x636f756368626e63)) // "couchbnc"
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}
