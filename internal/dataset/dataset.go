// Package dataset generates the benchmark's documents: the seed articles' score document
// and its padded "large" variant, deterministically from a seed.
//
// Every document is a pure function of (seed, profile, index): document i is drawn from its
// own PCG stream seeded with (seed, i), so documents can be generated in any order, by any
// number of workers, and a reader (k6, a test) can compute any document's id and content
// without the others. The ids are the zero-padded index, so they sort in insertion order:
// sequential ids append to CouchDB's B-trees instead of seeking (seed 003).
package dataset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// ReferenceDate anchors createdAt: every document is dated within the year before it
// (the seed's "random date within last year", made reproducible). It is the day the
// project's CouchDB 3.4.3 reference measurements were recorded.
var ReferenceDate = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

const (
	// seedPaddingRepeat is the seed article's random_str() * 100.
	seedPaddingRepeat = 100
	// maxPaddingKeys is the seed's random.randint(0, 100) keys.
	maxPaddingKeys = 100
	letters        = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	nameLength     = 6
	// base64Length is a name's length in base64: 6 bytes, two whole 3-byte groups.
	base64Length = 8
)

// Generator makes the documents of one profile.
type Generator struct {
	seed    uint64
	profile benchv1.DocumentProfile
	// paddingRepeat is how often a padding value repeats its random 6-letter string.
	paddingRepeat int
	// IDs is how ids are made; the zero value is sequential.
	IDs benchv1.DocumentIDs
	// idSalt makes random ids differ between seeds (IDSalt of the seed).
	idSalt uint32
}

// New returns the generator for a seed and profile, with sequential ids.
func New(seed int64, profile benchv1.DocumentProfile) *Generator {
	g := &Generator{seed: uint64(seed), profile: profile, paddingRepeat: seedPaddingRepeat, idSalt: IDSalt(seed)}
	if profile.Type == benchv1.DocumentLarge && profile.TargetBytes != nil {
		g.paddingRepeat = paddingRepeatFor(*profile.TargetBytes)
	}
	return g
}

// paddingRepeat solves the average size for the repeat count r. A padding entry is
// "key":"base64" plus punctuation: 6 + 6 + 8r bytes (6r random letters encode to exactly
// 8r base64 characters); a document has 50 entries on average (0-100 uniform), and the
// rest of the document is about 150 bytes.
func paddingRepeatFor(targetBytes int64) int {
	const fixed, entryOverhead, meanEntries = 150, 12, 50
	r := (targetBytes - fixed - meanEntries*entryOverhead) / (meanEntries * 8)
	return int(max(r, 1))
}

// Profile is the generator's profile.
func (g *Generator) Profile() benchv1.DocumentProfile { return g.profile }

// ProfileName names a profile in results and database names: "small", "large",
// "large-300000".
func ProfileName(p benchv1.DocumentProfile) string {
	if p.TargetBytes != nil {
		return fmt.Sprintf("%s-%d", p.Type, *p.TargetBytes)
	}
	return string(p.Type)
}

// Slice is part's share of documents 0..documents-1 when parts loaders share them: the
// contiguous documents from..from+count-1. The slices of all parts cover every document
// once and differ in size by at most one.
func Slice(documents int64, part, parts int) (from, count int64) {
	from = documents * int64(part) / int64(parts)
	return from, documents*int64(part+1)/int64(parts) - from
}

// ID is the sequential id of document i.
func ID(i int64) string { return fmt.Sprintf("%010d", i) }

// ID is the id of document i, sequential or random as the generator makes them.
func (g *Generator) ID(i int64) string {
	if g.IDs != benchv1.IDsRandom {
		return ID(i)
	}
	return RandomID(g.idSalt, i)
}

// IDSalt makes a seed's random ids differ from another seed's; the k6 script is handed it.
func IDSalt(seed int64) uint32 { return fmix32(uint32(seed) ^ uint32(uint64(seed)>>32)) }

// RandomID is the random id of document i: four 32-bit words in hex, the first a bijection
// of i (MurmurHash3's finalizer, so no two documents below 2^32 share it), each next one
// mixed from the one before. The k6 script computes the same with Math.imul.
func RandomID(salt uint32, i int64) string {
	w := fmix32(uint32(i) ^ salt)
	var b strings.Builder
	b.Grow(32)
	for k := range 4 {
		if k > 0 {
			w = fmix32(w + 0x9e3779b9)
		}
		fmt.Fprintf(&b, "%08x", w)
	}
	return b.String()
}

// fmix32 is MurmurHash3's 32-bit finalizer: a bijection that scatters its input's bits.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// draw is the part of a document the view reads; it comes first in every document's stream
// so that Expected need not generate the padding.
type draw struct {
	rng       *rand.Rand
	createdAt time.Time
	score     int
}

func (g *Generator) draw(i int64) draw {
	rng := rand.New(rand.NewPCG(g.seed, uint64(i)))
	days := rng.IntN(367) // randint(0, 366)
	score := rng.IntN(5001)
	return draw{rng: rng, createdAt: ReferenceDate.AddDate(0, 0, -days), score: score}
}

// JSON generates document i as JSON.
func (g *Generator) JSON(i int64) json.RawMessage { return g.AppendJSON(nil, i) }

// AppendJSON appends document i, as JSON, to dst: a loader encodes a batch's documents into
// one buffer it reuses, so that generating a document allocates next to nothing, even a
// large one. The bytes are those encoding/json gives the seed's document: its fields in
// order (tiny: _id, foo; else _id, metadata {docType, createdAt}, username, score, and for
// large custom_data, omitted when empty, its keys sorted, a key drawn twice keeping its last
// value, as a map does).
func (g *Generator) AppendJSON(dst []byte, i int64) []byte {
	dst = append(dst, `{"_id":"`...)
	dst = append(dst, g.ID(i)...)
	if g.profile.Type == benchv1.DocumentTiny {
		return append(dst, `","foo":"bar"}`...)
	}
	d := g.draw(i)
	dst = append(dst, `","metadata":{"docType":"score","createdAt":"`...)
	dst = d.createdAt.AppendFormat(dst, time.DateOnly)
	dst = append(dst, `"},"username":"`...)
	username := randomName(d.rng)
	dst = append(dst, username[:]...)
	dst = append(dst, `","score":`...)
	dst = strconv.AppendInt(dst, int64(d.score), 10)
	if g.profile.Type == benchv1.DocumentLarge {
		dst = g.appendPadding(dst, d.rng)
	}
	return append(dst, '}')
}

// paddingEntry is one custom_data key and the random string its value repeats.
type paddingEntry struct{ key, value [nameLength]byte }

// appendPadding draws the seed's custom_data and appends it as `,"custom_data":{...}`.
func (g *Generator) appendPadding(dst []byte, rng *rand.Rand) []byte {
	var drawn [maxPaddingKeys + 1]paddingEntry
	entries := drawn[:rng.IntN(maxPaddingKeys+1)]
	for k := range entries {
		entries[k] = paddingEntry{key: randomName(rng), value: randomName(rng)}
	}
	return appendCustomData(dst, entries, g.paddingRepeat)
}

// appendCustomData appends the entries as encoding/json encodes the seed's map of key to
// base64(value repeated repeat times): sorted by key, the last of a key's entries winning,
// nothing when there are none. A 6-letter value is 6 bytes, a whole number of base64's
// 3-byte groups, so the repeated value encodes to its 8 characters repeated.
func appendCustomData(dst []byte, entries []paddingEntry, repeat int) []byte {
	if len(entries) == 0 {
		return dst
	}
	slices.SortStableFunc(entries, func(a, b paddingEntry) int { return bytes.Compare(a.key[:], b.key[:]) })
	dst = append(dst, `,"custom_data":{`...)
	first := true
	for k, e := range entries {
		if k+1 < len(entries) && entries[k+1].key == e.key {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var encoded [base64Length]byte
		base64.StdEncoding.Encode(encoded[:], e.value[:])
		dst = append(dst, '"')
		dst = append(dst, e.key[:]...)
		dst = append(dst, `":"`...)
		dst = slices.Grow(dst, repeat*base64Length+1)
		for range repeat {
			dst = append(dst, encoded[:]...)
		}
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func randomName(rng *rand.Rand) [nameLength]byte {
	var b [nameLength]byte
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return b
}

// MonthKey is a key of the seed's view: [year, month], both strings.
type MonthKey struct {
	Year  string
	Month string
}

// Expected is the seed view's full answer for documents 0..n-1 (group=true, reduce sum):
// the sum of scores per [year, month]. The runner compares a built view with it.
func (g *Generator) Expected(n int64) map[MonthKey]int64 {
	sums := make(map[MonthKey]int64, 13)
	for i := range n {
		d := g.draw(i)
		key := MonthKey{Year: fmt.Sprintf("%04d", d.createdAt.Year()), Month: fmt.Sprintf("%02d", int(d.createdAt.Month()))}
		sums[key] += int64(d.score)
	}
	return sums
}
