package couchtest

import (
	"encoding/json"
	"maps"
	"slices"
	"unicode"
)

// View rows are ordered by CouchDB's collation: null < false < true < numbers < strings <
// arrays < objects, arrays element by element. CouchDB compares strings with ICU's Unicode
// Collation Algorithm; this server implements only what its views emit, ASCII strings
// (dates, ids), with the order the CouchDB documentation spells out for 7-bit ASCII
// (docs/src/ddocs/views/collation.rst): symbols first, then digits, then letters, where
// letters compare regardless of case and, when the letters are the same, lowercase comes
// before uppercase ("abc" < "Abc" < "ABC" < "abc1"). Other characters sort after ASCII by
// code point, and objects member by member in key order (CouchDB goes by the order written,
// which decoding loses): approximations, not ICU.

// asciiOrder is the documented sequence; the space, invisible in the documentation's list,
// comes first in ICU's root collation.
const asciiOrder = " `^_-,;:!?.'\"()[]{}@*/\\&#%+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"

// primary is each ASCII character's weight, the same for a letter's two cases.
var primary = func() [128]int {
	var w [128]int
	next := 1 << 8 // after the control characters, which keep their code points
	for i := 0; i < len(asciiOrder); i++ {
		c := asciiOrder[i]
		if unicode.IsUpper(rune(c)) {
			w[c] = w[unicode.ToLower(rune(c))]
			continue
		}
		w[c] = next
		next++
	}
	for c := range 32 {
		w[c] = c
	}
	w[127] = 127
	return w
}()

func weight(r rune) int {
	if r < 128 {
		return primary[r]
	}
	return 1<<16 + int(r)
}

// compareStrings orders two strings by their weights, then by case.
func compareStrings(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		if wa, wb := weight(ra[i]), weight(rb[i]); wa != wb {
			return sign(wa - wb)
		}
	}
	if len(ra) != len(rb) {
		return sign(len(ra) - len(rb))
	}
	for i := range ra {
		if ra[i] != rb[i] {
			// Same weight, different characters: the same letter in two cases.
			if unicode.IsLower(ra[i]) {
				return -1
			}
			return 1
		}
	}
	return 0
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func typeRank(v any) int {
	switch t := v.(type) {
	case nil:
		return 0
	case bool:
		if t {
			return 2
		}
		return 1
	case json.Number:
		return 3
	case string:
		return 4
	case []any:
		return 5
	}
	return 6
}

// collate compares two decoded JSON values (decodeValue) in view order.
func collate(a, b any) int {
	if ra, rb := typeRank(a), typeRank(b); ra != rb {
		return sign(ra - rb)
	}
	switch x := a.(type) {
	case json.Number:
		fa, _ := x.Float64()
		fb, _ := b.(json.Number).Float64()
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case string:
		return compareStrings(x, b.(string))
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := collate(x[i], y[i]); c != 0 {
				return c
			}
		}
		return sign(len(x) - len(y))
	case map[string]any:
		return compareObjects(x, b.(map[string]any))
	}
	return 0 // null, or booleans of the same rank
}

func compareObjects(a, b map[string]any) int {
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := compareStrings(ka[i], kb[i]); c != 0 {
			return c
		}
		if c := collate(a[ka[i]], b[kb[i]]); c != 0 {
			return c
		}
	}
	return sign(len(ka) - len(kb))
}
