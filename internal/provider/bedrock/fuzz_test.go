package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// streamSeeds are the recorded streams encoded as frames, plus a few
// hand-made bodies.
func streamSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*.chunks.txt"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if frames, err := providertest.BedrockFrames(b); err == nil {
			f.Add(frames)
			f.Add(frames[:len(frames)/2])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	var buf bytes.Buffer
	providertest.EncodeBedrockException(eventstreamEncoder(), &buf, "modelStreamErrorException", []byte(`{"message":"boom","originalStatusCode":500}`))
	f.Add(buf.Bytes())
}

// FuzzFrameReader feeds arbitrary bytes to the frame reader: it must not
// panic, must stop, and must never hand out a frame larger than its bound.
func FuzzFrameReader(f *testing.F) {
	streamSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data))
		for i := 0; ; i++ {
			if i > len(data) {
				t.Fatalf("more frames (%d) than input bytes (%d)", i, len(data))
			}
			msg, err := fr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errBadFrame) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
			if len(msg.Payload) > maxFrameLen || cap(fr.frame) > maxFrameLen {
				t.Fatalf("frame of %d bytes exceeds the bound", len(msg.Payload))
			}
		}
	})
}

// FuzzStream runs the whole stream translation over arbitrary bodies: every
// chunk must be JSON, and the stream must end with io.EOF or an error the
// gateway knows.
func FuzzStream(f *testing.F) {
	streamSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, extended := range []bool{false, true} {
			resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(data))}
			st := newStream(context.Background(), resp, "m", "chatcmpl-x", extended)
			for n := 0; ; n++ {
				if n > 4*len(data)+8 {
					t.Fatalf("stream yields more chunks (%d) than its input could hold", n)
				}
				ch, err := st.Next()
				if err != nil {
					var se *provider.StreamError
					if !errors.Is(err, io.EOF) && !errors.Is(err, provider.ErrStreamBroken) && !errors.As(err, &se) {
						t.Fatalf("unexpected error kind: %v", err)
					}
					break
				}
				if !json.Valid(ch.Data) {
					t.Fatalf("chunk is not JSON: %s", ch.Data)
				}
			}
			st.Close()
		}
	})
}
