package purgatory

import "sync"

// inflight are the keys whose durable write is in progress, each with the
// channel closed when that write has ended and its result is visible. It
// belongs to one lock (Purgatory.mu, or the /prs/ ledger's) and is only
// touched under it.
//
// This is how no act holds a lock across an fsync or a PostgreSQL commit:
// it decides under the lock and claims the keys it will write, writes with
// the lock released, then takes the lock again to make the result visible
// and give the keys back. Acts on different keys overlap; acts on one key
// run one after the other, the later one deciding on what the earlier one
// left, so none is lost or done twice.
type inflight map[string]chan struct{}

// claim is called with mu held and returns with mu held. decide (called
// under mu) returns the keys the act will write; while one of them is
// being written, claim releases mu, waits for that write to end and calls
// decide again, since what it read may have changed. It then claims the
// keys and returns them. An error from decide is returned with nothing
// claimed.
func (f inflight) claim(mu *sync.Mutex, decide func() ([]string, error)) ([]string, error) {
	for {
		keys, err := decide()
		if err != nil {
			return nil, err
		}
		var busy chan struct{}
		for _, k := range keys {
			if ch, ok := f[k]; ok {
				busy = ch
				break
			}
		}
		if busy == nil {
			for _, k := range keys {
				f[k] = make(chan struct{})
			}
			return keys, nil
		}
		mu.Unlock()
		<-busy
		mu.Lock()
	}
}

// done gives claimed keys back, waking whoever waits for them. Called
// under the lock, after the write's result is visible.
func (f inflight) done(keys []string) {
	for _, k := range keys {
		if ch, ok := f[k]; ok {
			close(ch)
			delete(f, k)
		}
	}
}

// key names one side-table entry (bucket and key) among the claims.
func key(bucket, k string) string { return bucket + "\x00" + k }

// addrKey names the address of an addressable event among the claims:
// holds of one address run one after the other, so a replacement is
// always decided against the newest one held.
func addrKey(addr string) string { return "address\x00" + addr }
