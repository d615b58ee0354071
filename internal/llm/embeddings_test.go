package llm

import "testing"

func TestDecodeEmbeddingRequest(t *testing.T) {
	for _, tc := range []struct {
		body        string
		code, param string
		texts, toks int
	}{
		{body: `{"model":"m","input":"hello"}`, texts: 1},
		{body: `{"model":"m","input":["a","b"]}`, texts: 2},
		{body: `{"model":"m","input":[1,2,3]}`, toks: 1},
		{body: `{"model":"m","input":[[1,2],[3]]}`, toks: 2},
		{body: `{"input":"x"}`, code: CodeMissingRequired, param: "model"},
		{body: `{"model":"m"}`, code: CodeMissingRequired, param: "input"},
		{body: `{"model":"m","input":[]}`, code: CodeInvalidValue, param: "input"},
		{body: `{"model":"m","input":{"a":1}}`, code: CodeInvalidType, param: "input"},
		{body: `{"model":"m","input":[true]}`, code: CodeInvalidType, param: "input"},
		{body: `{"model":"m","input":"x","encoding_format":"int8"}`, code: CodeInvalidValue, param: "encoding_format"},
		{body: `{"model":"m","input":"x","dimensions":0}`, code: CodeInvalidValue, param: "dimensions"},
		{body: `{"model":5,"input":"x"}`, code: CodeInvalidType, param: "model"},
		{body: `[`, code: CodeInvalidJSON},
	} {
		r, err := DecodeEmbeddingRequest([]byte(tc.body))
		if tc.code == "" {
			if err != nil || len(r.Texts) != tc.texts || len(r.Tokens) != tc.toks {
				t.Errorf("%s: %v texts %d tokens %d", tc.body, err, len(r.Texts), len(r.Tokens))
			}
			continue
		}
		le, ok := err.(*Error)
		if !ok || le.Code != tc.code || le.Param != tc.param {
			t.Errorf("%s: err = %v, want %s %s", tc.body, err, tc.code, tc.param)
		}
	}
}
