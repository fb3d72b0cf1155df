package nip34

import (
	"reflect"
	"testing"
)

func ann(pk, d string, created int64, maint ...string) Announcement {
	return Announcement{EventID: pk[:8] + d, Pubkey: pk, Identifier: d, CreatedAt: nostrTS(created), Maintainers: maint}
}

func TestG01G3_RecursiveMaintainers(t *testing.T) {
	var ms MaintainerSet = RecursiveMaintainers
	cases := []struct {
		name  string
		owner string
		anns  []Announcement
		want  []string
	}{
		{"owner only, no announcement", pkA, nil, []string{pkA}},
		{"direct", pkA, []Announcement{ann(pkA, "r", 1, pkB)}, []string{pkA, pkB}},
		{"recursive", pkA, []Announcement{ann(pkA, "r", 1, pkB), ann(pkB, "r", 1, pkC)}, []string{pkA, pkB, pkC}},
		{"other identifier ignored", pkA, []Announcement{ann(pkA, "r", 1, pkB), ann(pkB, "s", 1, pkC)}, []string{pkA, pkB}},
		{"non-member's list ignored", pkA, []Announcement{ann(pkA, "r", 1), ann(pkB, "r", 1, pkA, pkC)}, []string{pkA}},
		{"cycle terminates", pkA, []Announcement{ann(pkA, "r", 1, pkB), ann(pkB, "r", 1, pkA, pkC), ann(pkC, "r", 1, pkB)}, []string{pkA, pkB, pkC}},
		{"only newest version counts", pkA, []Announcement{ann(pkA, "r", 1, pkB), ann(pkA, "r", 2, pkC)}, []string{pkA, pkC}},
		{"newest version regardless of order", pkA, []Announcement{ann(pkA, "r", 2), ann(pkA, "r", 1, pkB)}, []string{pkA}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ms(c.owner, "r", c.anns)
			want := map[string]bool{}
			for _, pk := range c.want {
				want[pk] = true
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v want %v", keys(got), c.want)
			}
		})
	}
}

func TestLatest(t *testing.T) {
	got := Latest([]Announcement{ann(pkA, "r", 1), ann(pkA, "r", 3), ann(pkB, "r", 1), ann(pkA, "s", 1), ann(pkA, "r", 2)})
	if len(got) != 3 || got[0].CreatedAt != 3 {
		t.Fatalf("Latest = %+v", got)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k[:4])
	}
	return out
}
