package google

import "sync"

// Gemini 3 signs its reasoning and requires the signature back on the
// functionCall part when the conversation is resent; without it the
// request fails with 400 (PROVIDERS.md §0.3). OpenAI clients echo only
// tool_calls, which have no place for it. So besides returning signatures
// in content_blocks (strict compliance off), the adapter remembers the
// signature of every function call it returns, keyed by the tool-call id
// it gave the client, and puts it back when that id comes back.
//
// The memory is per gateway process and bounded: the oldest entries are
// forgotten first. A conversation resumed on another process, or after
// more than defaultSignatureEntries later calls, loses its signatures;
// then the Gemini 3 placeholder signature is sent instead (request.go).

// defaultSignatureEntries bounds the remembered signatures. Signatures
// are a few hundred bytes to a few KB, so this is some tens of MB at most.
const defaultSignatureEntries = 8192

// maxSignatureBytes skips pathological signatures rather than hold them.
const maxSignatureBytes = 64 << 10

// signatureStore is a bounded FIFO map from tool-call id to thought
// signature, safe for concurrent use.
type signatureStore struct {
	mu   sync.Mutex
	m    map[string]string
	ring []string
	next int
}

func newSignatureStore(n int) *signatureStore {
	return &signatureStore{m: make(map[string]string, n), ring: make([]string, n)}
}

// put remembers sig for id; empty values are ignored.
func (s *signatureStore) put(id, sig string) {
	if id == "" || sig == "" || len(sig) > maxSignatureBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; ok {
		s.m[id] = sig
		return
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.m, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.m[id] = sig
}

// get returns the signature remembered for id, or "".
func (s *signatureStore) get(id string) string {
	if id == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}
