package couchtest

import (
	"slices"
	"strings"
	"testing"
)

func TestCollateASCIIAsDocumented(t *testing.T) {
	var chars []string
	for c := 32; c < 127; c++ {
		chars = append(chars, string(rune(c)))
	}
	slices.SortFunc(chars, compareStrings)
	// docs/src/ddocs/views/collation.rst, the space first.
	want := " ` ^ _ - , ; : ! ? . ' \" ( ) [ ] { } @ * / \\ & # % + < = > | ~ $ 0 1 2 3 4 5 6 7 8 9 " +
		"a A b B c C d D e E f F g G h H i I j J k K l L m M n N o O p P q Q r R s S t T u U v V w W x X y Y z Z"
	if got := strings.Join(chars[1:], " "); chars[0] != " " || got != want[1:] {
		t.Errorf("ASCII order\n%s\nwant\n%s", got, want[1:])
	}
}

func TestCollate(t *testing.T) {
	// Each value sorts before the next.
	ordered := []string{
		`null`, `false`, `true`, `-1`, `2`, `10.5`,
		`"a"`, `"A"`, `"aa"`, `"abc"`, `"Abc"`, `"ABC"`, `"abc1"`, `"AbcZZZZZ"`, `"b"`, `"é"`,
		`[]`, `["2025"]`, `["2025","12"]`, `["2026",null]`, `["2026","01"]`, `[["x"]]`,
		`{}`, `{"a":1}`, `{"a":2}`, `{"a":2,"b":0}`, `{"b":0}`,
	}
	for i := 1; i < len(ordered); i++ {
		a, errA := decodeValue([]byte(ordered[i-1]))
		b, errB := decodeValue([]byte(ordered[i]))
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if collate(a, b) >= 0 || collate(b, a) <= 0 || collate(a, a) != 0 {
			t.Errorf("%s should sort before %s", ordered[i-1], ordered[i])
		}
	}
}
