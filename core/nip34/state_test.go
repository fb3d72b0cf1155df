package nip34

import (
	"reflect"
	"testing"
)

func TestN34_2_StateParsing(t *testing.T) {
	cases := []struct {
		name     string
		tags     [][]string
		wantRefs map[string]string
		wantHEAD string
		wantErr  bool
	}{
		{
			name:     "heads tags HEAD with ref prefix",
			tags:     [][]string{{"d", "r"}, {"refs/heads/main", oid('1')}, {"refs/tags/v1", oid('2')}, {"HEAD", "ref: refs/heads/main"}},
			wantRefs: map[string]string{"refs/heads/main": oid('1'), "refs/tags/v1": oid('2')},
			wantHEAD: "refs/heads/main",
		},
		{
			name:     "HEAD without prefix",
			tags:     [][]string{{"d", "r"}, {"refs/heads/dev", oid('1')}, {"HEAD", "refs/heads/dev"}},
			wantRefs: map[string]string{"refs/heads/dev": oid('1')},
			wantHEAD: "refs/heads/dev",
		},
		{
			name:     "peeled tags ignored",
			tags:     [][]string{{"d", "r"}, {"refs/tags/v1", oid('a')}, {"refs/tags/v1^{}", oid('b')}},
			wantRefs: map[string]string{"refs/tags/v1": oid('a')},
		},
		{
			name:     "other refs kept, non-ref tags ignored",
			tags:     [][]string{{"d", "r"}, {"refs/notes/commits", oid('3')}, {"refs/nostr/" + pkA, oid('4')}, {"alt", "x"}, {"r", "y"}},
			wantRefs: map[string]string{"refs/notes/commits": oid('3'), "refs/nostr/" + pkA: oid('4')},
		},
		{
			name:     "uppercase and sha256 ids",
			tags:     [][]string{{"d", "r"}, {"refs/heads/a", "ABCDEF0123456789ABCDEF0123456789ABCDEF01"}, {"refs/heads/b", pkC}},
			wantRefs: map[string]string{"refs/heads/a": "abcdef0123456789abcdef0123456789abcdef01", "refs/heads/b": pkC},
		},
		{
			name:     "empty refs = empty repo",
			tags:     [][]string{{"d", "r"}, {"HEAD", "ref: refs/heads/main"}},
			wantRefs: map[string]string{},
			wantHEAD: "refs/heads/main",
		},
		{name: "same ref twice same id", tags: [][]string{{"d", "r"}, {"refs/heads/x", oid('1')}, {"refs/heads/x", oid('1')}}, wantRefs: map[string]string{"refs/heads/x": oid('1')}},
		{name: "same ref twice different id", tags: [][]string{{"d", "r"}, {"refs/heads/x", oid('1')}, {"refs/heads/x", oid('2')}}, wantErr: true},
		{name: "bad oid", tags: [][]string{{"d", "r"}, {"refs/heads/x", "zz"}}, wantErr: true},
		{name: "short oid", tags: [][]string{{"d", "r"}, {"refs/heads/x", "abc123"}}, wantErr: true},
		{name: "dotdot ref", tags: [][]string{{"d", "r"}, {"refs/heads/../x", oid('1')}}, wantErr: true},
		{name: "space in ref", tags: [][]string{{"d", "r"}, {"refs/heads/a b", oid('1')}}, wantErr: true},
		{name: "lock ref", tags: [][]string{{"d", "r"}, {"refs/heads/x.lock", oid('1')}}, wantErr: true},
		{name: "HEAD detached oid", tags: [][]string{{"d", "r"}, {"HEAD", oid('1')}}, wantErr: true},
		{name: "HEAD short name", tags: [][]string{{"d", "r"}, {"HEAD", "ref: main"}}, wantErr: true},
		{name: "missing d", tags: [][]string{{"refs/heads/x", oid('1')}}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseState(ev(KindState, pkA, c.tags...))
			if c.wantErr {
				if err == nil {
					t.Fatalf("want error, got %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Refs, c.wantRefs) || s.HEAD != c.wantHEAD {
				t.Fatalf("refs %v HEAD %q; want %v %q", s.Refs, s.HEAD, c.wantRefs, c.wantHEAD)
			}
			if s.Empty() != (len(c.wantRefs) == 0) {
				t.Fatalf("Empty() = %v", s.Empty())
			}
		})
	}
}

func TestN34_2_StateViews(t *testing.T) {
	s, err := ParseState(ev(KindState, pkA, []string{"d", "r"},
		[]string{"refs/heads/main", oid('1')}, []string{"refs/heads/dev", oid('1')}, []string{"refs/tags/v1", oid('2')}))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.OIDs(); !reflect.DeepEqual(got, []string{oid('1'), oid('2')}) {
		t.Fatalf("OIDs = %v", got)
	}
	if got := s.Branches(); !reflect.DeepEqual(got, map[string]string{"main": oid('1'), "dev": oid('1')}) {
		t.Fatalf("Branches = %v", got)
	}
	if got := s.Tags(); !reflect.DeepEqual(got, map[string]string{"v1": oid('2')}) {
		t.Fatalf("Tags = %v", got)
	}
	if _, err := ParseState(ev(KindAnnouncement, pkA, []string{"d", "r"})); err == nil {
		t.Fatal("wrong kind accepted")
	}
}
