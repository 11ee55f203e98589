package results

import "github.com/couchbench/couchbench/internal/measured"

// JoinParts is the document of a step that runners shared (seed or writes with
// spec.runner.parallelism), from the parts' documents in part order: part 0's, which alone
// holds the runtime probe, CouchDB's load and what the write databases held, with each
// profile's seeding and writes joined exactly over the parts (measured.JoinSeedings,
// measured.JoinWrites), every step record spanning the parts' records, the busiest part's
// CPU use (the generator is bound if any part was), and the first error. One document is
// returned as it is.
func JoinParts(parts []*Document) *Document {
	joined := parts[0]
	if len(parts) == 1 {
		return joined
	}
	for _, d := range parts[1:] {
		if d.StartedAt.Before(joined.StartedAt) {
			joined.StartedAt = d.StartedAt
		}
		if d.FinishedAt.After(joined.FinishedAt) {
			joined.FinishedAt = d.FinishedAt
		}
		if joined.Error == "" {
			joined.Error, joined.Interrupted = d.Error, d.Interrupted
		}
		for _, rec := range d.Steps {
			joinStep(joined, rec)
		}
	}
	for ai := range joined.Arms {
		a := &joined.Arms[ai]
		for pi := range a.Profiles {
			p := &a.Profiles[pi]
			var loads []measured.Seeding
			for _, d := range parts {
				if q := profileIn(d, a.QueryServer, p.Profile); q != nil && q.Seeding != nil {
					loads = append(loads, *q.Seeding)
				}
			}
			if len(loads) > 0 {
				total := measured.JoinSeedings(loads)
				p.Seeding, p.SeedingDocsPerSecond, p.SeedingMBPerSecond = &total, total.DocsPerSecond(), total.MBPerSecond()
			}
			// A repeated load is joined load by load, the parts' i-th loads together.
			for i := range p.SeedingRuns {
				var load []measured.Seeding
				for _, d := range parts {
					if q := profileIn(d, a.QueryServer, p.Profile); q != nil && i < len(q.SeedingRuns) {
						load = append(load, q.SeedingRuns[i])
					}
				}
				p.SeedingRuns[i] = measured.JoinSeedings(load)
			}
			var written, warmUps [][]measured.Write
			for _, d := range parts {
				if w := profileIn(d, a.QueryServer, p.Profile); w != nil {
					written, warmUps = append(written, w.Writes), append(warmUps, w.WritesWarmUp)
				}
			}
			p.Writes, p.WritesWarmUp = measured.JoinWrites(written), measured.JoinWrites(warmUps)
		}
	}
	return joined
}

// joinStep widens the joined document's record of the same arm and step to rec's span.
func joinStep(joined *Document, rec StepRecord) {
	for i := range joined.Steps {
		j := &joined.Steps[i]
		if j.QueryServer != rec.QueryServer || j.Step != rec.Step {
			continue
		}
		if rec.StartedAt.Before(j.StartedAt) {
			j.StartedAt = rec.StartedAt
		}
		if rec.FinishedAt.After(j.FinishedAt) {
			j.FinishedAt = rec.FinishedAt
		}
		if j.Error == "" {
			j.Error = rec.Error
		}
		if u := rec.LoadGenerator; u != nil && (j.LoadGenerator == nil || u.BusyPercent > j.LoadGenerator.BusyPercent) {
			j.LoadGenerator = u
		}
		return
	}
	joined.Steps = append(joined.Steps, rec)
}

// profileIn is one arm's profile in d, or nil.
func profileIn(d *Document, arm, profile string) *Profile {
	for ai := range d.Arms {
		if d.Arms[ai].QueryServer != arm {
			continue
		}
		for pi := range d.Arms[ai].Profiles {
			if p := &d.Arms[ai].Profiles[pi]; p.Profile == profile {
				return p
			}
		}
	}
	return nil
}
