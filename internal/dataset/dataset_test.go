package dataset

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

var (
	small = benchv1.DocumentProfile{Type: benchv1.DocumentSmall}
	large = benchv1.DocumentProfile{Type: benchv1.DocumentLarge}
)

// scoreDoc is the seed's score document as a reader decodes it.
type scoreDoc struct {
	ID       string `json:"_id"`
	Metadata struct {
		DocType   string `json:"docType"`
		CreatedAt string `json:"createdAt"`
	} `json:"metadata"`
	Score      int               `json:"score"`
	CustomData map[string]string `json:"custom_data"`
}

func decode(t *testing.T, g *Generator, i int64) scoreDoc {
	t.Helper()
	var doc scoreDoc
	if err := json.Unmarshal(g.JSON(i), &doc); err != nil {
		t.Fatalf("document %d: %v", i, err)
	}
	return doc
}

// The documents are the same bytes as before the generator encoded them itself (it used
// encoding/json on a struct with a map): hashes of the first documents of every profile and
// id kind, taken from that generator. A benchmark's results are comparable across versions
// only while the data is.
func TestDocumentsAreTheSameBytesAsEver(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  *Generator
		n    int64
		hash string
	}{
		{"small", New(1, small), 2000, "e9e59d975e5bb78f03ea38d94481817af472bbd82674fe55922471096bbafe26"},
		{"large", New(1, large), 300, "7523b3603e2646da5469e129147b19430c901daadb42597e8a9a555957f92209"},
		{"large-300000", New(1, benchv1.DocumentProfile{Type: benchv1.DocumentLarge, TargetBytes: ptr.To[int64](300000)}), 20,
			"c83d3b416ab3cf04f8f37f4851180a3c4fad22ddd49f9d0aeb9352b026d54511"},
		{"large-256 seed 9", New(9, benchv1.DocumentProfile{Type: benchv1.DocumentLarge, TargetBytes: ptr.To[int64](256)}), 300,
			"0030c424baa5fa5bec78da4bf60d33282ab8570ae10bce9adada1af59267475c"},
		{"tiny", New(1, benchv1.DocumentProfile{Type: benchv1.DocumentTiny}), 100,
			"4af91a47983c97db100f44a911fd14ee8f9390aaec8b10aea2060377b4e03f1e"},
		{"small random ids seed 7", randomIDs(New(7, small)), 300, "fe0cc44a379f8b5d1b2aca0fa321c4e3e1541b9e7ffe210ae7fc296f607f9e89"},
	} {
		h := sha256.New()
		for i := range tc.n {
			h.Write(tc.gen.JSON(i))
			h.Write([]byte{'\n'})
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != tc.hash {
			t.Errorf("%s: the first %d documents hash to %s, want %s: the generated data changed", tc.name, tc.n, got, tc.hash)
		}
	}
}

func randomIDs(g *Generator) *Generator {
	g.IDs = benchv1.IDsRandom
	return g
}

// custom_data is what encoding/json makes of the seed's map, also when a key is drawn twice
// (a map keeps the last value; 52^6 keys make that rare enough that the hashes above may
// never meet it) or not at all (omitempty).
func TestCustomDataIsEncodedAsTheSeedsMap(t *testing.T) {
	name := func(s string) (b [nameLength]byte) { copy(b[:], s); return b }
	for _, entries := range [][]paddingEntry{
		nil,
		{{key: name("bbbbbb"), value: name("xxxxxx")}},
		{{key: name("zzzzzz"), value: name("aaaaaa")}, {key: name("AAAAAA"), value: name("bbbbbb")},
			{key: name("zzzzzz"), value: name("cccccc")}, {key: name("mmmmmm"), value: name("dddddd")},
			{key: name("zzzzzz"), value: name("eeeeee")}},
	} {
		seed := map[string]string{}
		for _, e := range entries {
			seed[string(e.key[:])] = base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(e.value[:]), 3)))
		}
		want := ""
		if len(seed) > 0 {
			data, err := json.Marshal(seed)
			if err != nil {
				t.Fatal(err)
			}
			want = `,"custom_data":` + string(data)
		}
		if got := string(appendCustomData(nil, entries, 3)); got != want {
			t.Errorf("custom_data of %d entries:\n got %s\nwant %s", len(entries), got, want)
		}
	}
}

// Appending to a buffer that holds documents already leaves them as they were.
func TestAppendJSONAppends(t *testing.T) {
	g := New(2, large)
	var buf []byte
	var want string
	for i := range int64(5) {
		buf = g.AppendJSON(buf, i)
		want += string(g.JSON(i))
	}
	if string(buf) != want {
		t.Error("documents appended to one buffer differ from the documents one by one")
	}
}

func TestDocumentsAreDeterministicAndIndependentOfOrder(t *testing.T) {
	a, b := New(7, large), New(7, large)
	// Generate b's documents backwards: document i must not depend on the others.
	want := make([]string, 50)
	for i := int64(49); i >= 0; i-- {
		want[i] = string(b.JSON(i))
	}
	for i := range int64(50) {
		if got := string(a.JSON(i)); got != want[i] {
			t.Fatalf("document %d differs between two generators with the same seed", i)
		}
	}
	if string(New(8, large).JSON(3)) == want[3] {
		t.Error("another seed gave the same document")
	}
}

func TestSmallDocumentHasTheSeedShape(t *testing.T) {
	g := New(1, small)
	dateRE := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	nameRE := regexp.MustCompile(`^[a-zA-Z]{6}$`)
	oldest := ReferenceDate.AddDate(0, 0, -366)
	for i := range int64(2000) {
		var doc map[string]any
		if err := json.Unmarshal(g.JSON(i), &doc); err != nil {
			t.Fatal(err)
		}
		if doc["_id"] != ID(i) {
			t.Fatalf("doc %d has _id %v", i, doc["_id"])
		}
		meta := doc["metadata"].(map[string]any)
		if meta["docType"] != "score" {
			t.Fatalf("docType %v", meta["docType"])
		}
		created, _ := meta["createdAt"].(string)
		if !dateRE.MatchString(created) {
			t.Fatalf("createdAt %q is not YYYY-MM-DD", created)
		}
		day, _ := time.Parse(time.DateOnly, created)
		if day.After(ReferenceDate) || day.Before(oldest) {
			t.Fatalf("createdAt %s outside the year before %s", created, ReferenceDate.Format(time.DateOnly))
		}
		if name, _ := doc["username"].(string); !nameRE.MatchString(name) {
			t.Fatalf("username %q is not 6 letters", name)
		}
		if score := doc["score"].(float64); score < 0 || score > 5000 || score != float64(int(score)) {
			t.Fatalf("score %v outside 0-5000", score)
		}
		if _, ok := doc["custom_data"]; ok {
			t.Fatal("a small document has custom_data")
		}
	}
}

func TestIDsSortInInsertionOrder(t *testing.T) {
	for _, pair := range [][2]int64{{9, 10}, {99, 100}, {999999, 1000000}} {
		if ID(pair[0]) >= ID(pair[1]) {
			t.Errorf("ID(%d)=%s does not sort before ID(%d)=%s", pair[0], ID(pair[0]), pair[1], ID(pair[1]))
		}
	}
}

func TestLargeDocumentPadding(t *testing.T) {
	g := New(3, large)
	var total, keys int
	const n = 400
	for i := range int64(n) {
		doc := decode(t, g, i)
		if len(doc.CustomData) > maxPaddingKeys {
			t.Fatalf("%d padding keys, the seed draws at most %d", len(doc.CustomData), maxPaddingKeys)
		}
		keys += len(doc.CustomData)
		total += len(g.JSON(i))
	}
	// The seed's padding: 0-100 keys (mean 50) of 800 base64 characters each: about 41 kB.
	if mean := total / n; mean < 30000 || mean > 52000 {
		t.Errorf("mean large document is %d bytes, want about 41000 for the seed's padding", mean)
	}
	if mean := float64(keys) / n; mean < 40 || mean > 60 {
		t.Errorf("mean %.1f padding keys, want about 50", mean)
	}
}

func TestLargeDocumentTargetSize(t *testing.T) {
	for _, target := range []int64{4096, 300000} {
		g := New(5, benchv1.DocumentProfile{Type: benchv1.DocumentLarge, TargetBytes: ptr.To(target)})
		var total int64
		const n = 400
		for i := range int64(n) {
			total += int64(len(g.JSON(i)))
		}
		mean := total / n
		if ratio := float64(mean) / float64(target); ratio < 0.8 || ratio > 1.2 {
			t.Errorf("targetBytes %d: mean document %d bytes (%.2f of the target)", target, mean, ratio)
		}
	}
}

func TestExpectedMatchesTheDocuments(t *testing.T) {
	g := New(11, large)
	const n = 3000
	want := map[MonthKey]int64{}
	for i := range int64(n) {
		doc := decode(t, g, i)
		key := MonthKey{Year: doc.Metadata.CreatedAt[:4], Month: doc.Metadata.CreatedAt[5:7]}
		want[key] += int64(doc.Score)
	}
	got := g.Expected(n)
	if len(got) != len(want) {
		t.Fatalf("Expected has %d months, the documents %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("month %v: Expected %d, documents sum to %d", k, got[k], v)
		}
	}
	// A year of days spans 13 calendar months.
	if len(got) != 13 {
		t.Errorf("%d months, want 13", len(got))
	}
}

func BenchmarkSmallDocJSON(b *testing.B) {
	g := New(1, small)
	for i := range b.N {
		_ = g.JSON(int64(i))
	}
}

// BenchmarkLargeDocAppend is a loader's use: large documents appended to a buffer it reuses.
func BenchmarkLargeDocAppend(b *testing.B) {
	g := New(1, large)
	var buf []byte
	b.ReportAllocs()
	for i := range b.N {
		buf = g.AppendJSON(buf[:0], int64(i))
		b.SetBytes(int64(len(buf)))
	}
}

func TestSlicesCoverEveryDocumentOnce(t *testing.T) {
	for _, tc := range []struct {
		documents int64
		parts     int
	}{{10, 3}, {3, 3}, {100000, 7}, {1, 1}, {5, 4}} {
		next := int64(0)
		for part := range tc.parts {
			from, count := Slice(tc.documents, part, tc.parts)
			if from != next || count < tc.documents/int64(tc.parts) || count > tc.documents/int64(tc.parts)+1 {
				t.Errorf("%d documents, part %d of %d: from %d count %d; want from %d and a count within one of the others",
					tc.documents, part, tc.parts, from, count, next)
			}
			next = from + count
		}
		if next != tc.documents {
			t.Errorf("%d documents in %d parts: the slices end at %d", tc.documents, tc.parts, next)
		}
	}
}

// Random ids are 32 hex characters, distinct, deterministic for a seed and in no order (a
// sequential id's neighbours are its neighbours in the B-tree; a random one's are not).
func TestRandomIDs(t *testing.T) {
	g := New(7, small)
	g.IDs = benchv1.IDsRandom
	seen := map[string]bool{}
	ascending := 0
	prev := ""
	for i := range int64(100000) {
		id := g.ID(i)
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || seen[id] {
			t.Fatalf("document %d: id %q is not 32 hex characters or is taken", i, id)
		}
		seen[id] = true
		if id > prev {
			ascending++
		}
		prev = id
	}
	if ascending < 45000 || ascending > 55000 {
		t.Errorf("%d of 100000 ids follow a smaller one: want about half, as in no order", ascending)
	}
	other := New(8, small)
	other.IDs = benchv1.IDsRandom
	if g.ID(0) == other.ID(0) || g.ID(0) != RandomID(IDSalt(7), 0) {
		t.Errorf("ids of seed 7 and 8: %s %s; want them to differ, and the same for the same seed", g.ID(0), other.ID(0))
	}
	if doc := decode(t, g, 3); doc.ID != g.ID(3) {
		t.Errorf("document 3 has id %q, want %q", doc.ID, g.ID(3))
	}
}

// The tiny profile is seed 003's {"foo":"bar"} with its id.
func TestTinyDocument(t *testing.T) {
	g := New(1, benchv1.DocumentProfile{Type: benchv1.DocumentTiny})
	if got := string(g.JSON(42)); got != `{"_id":"0000000042","foo":"bar"}` {
		t.Errorf("tiny document: %s", got)
	}
}
