package names

import "testing"

func TestNamesAreValidCouchDBDatabaseNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Database("Quick.Start", "a1b2c3d4", "js", "large-300000"), "cb-quick_start-a1b2c3d4-js-large-300000"},
		{Database("bench", "", "py", "small"), "cb-bench-py-small"},
		{WriteDatabase("cb-bench-py-small", "parallelBulk-10x1000"), "cb-bench-py-small-w-parallelbulk-10x1000"},
		{RunPrefix("Quick.Start", "a1b2c3d4"), "cb-quick_start-a1b2c3d4-"},
		{RunPrefix("bench", ""), "cb-bench-"},
		{ProbeDatabase("bench", "r1", "py", 0), "cb-bench-r1-py-probe"},
		{ProbeDatabase("bench", "r1", "py", 2), "cb-bench-r1-py-probe-2"},
		{RunID("0123456789abcdef"), "01234567"},
		{RunID("abc"), "abc"},
		{IndexingDesignDoc("r1-builtin-2"), "_design/cb-idx-r1-builtin-2"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
