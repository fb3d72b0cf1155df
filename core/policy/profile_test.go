package policy

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
)

// G03-4: kind 0 and 10002 are stored for participants of hosted
// repositories (authors of stored events, p-tagged keys), refused with
// restricted: for strangers.
func TestG03_4_ProfilesOnlyForParticipants(t *testing.T) {
	e := newEnv(t, nil)
	stranger, mentioned := strings.Repeat("c", 64), strings.Repeat("d", 64)
	ann := e.ann(pkA, "r", true)
	e.stored(ann)
	issue := e.event(nip34.KindIssue, pkB, []string{"a", coord(pkA, "r")}, []string{"p", mentioned})
	e.stored(issue)
	for _, kind := range []int{kindMetadata, kindRelayList} {
		want(t, e.decide(e.event(kind, pkA, []string{"r", "wss://w.example"})), Store, "")
		want(t, e.decide(e.event(kind, pkB, []string{"r", "wss://w.example"})), Store, "")
		want(t, e.decide(e.event(kind, mentioned, []string{"r", "wss://w.example"})), Store, "")
		want(t, e.decide(e.event(kind, stranger, []string{"r", "wss://w.example"})), Rejected, "restricted:")
	}
}
