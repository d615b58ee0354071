package google

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// maxMediaBytes bounds an image the gateway downloads to inline: Gemini's
// whole request is limited to about 20 MB (PROVIDERS.md §0.5).
const maxMediaBytes = 20 << 20

// mediaTimeout bounds one image download, so a slow image host cannot hold
// a request that has no deadline of its own.
const mediaTimeout = 30 * time.Second

// imagePart turns an image_url into a part. Gemini takes no web URLs
// (PROVIDERS.md §0.5): data: URLs become inlineData; http(s) URLs are
// fetched by the gateway and inlined, except Gemini Files API URIs, which
// are referenced; on Vertex, gs:// URIs are referenced as fileData.
func (c *Client) imagePart(ctx context.Context, raw, param string) (part, error) {
	switch {
	case strings.HasPrefix(raw, "data:"):
		mt, data, err := parseDataURL(raw)
		if err != nil {
			return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param, Reason: err.Error()}
		}
		return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
	case strings.HasPrefix(raw, "gs://"):
		if !c.vertex {
			return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param, Reason: "gs:// URIs are read only by Vertex AI; send a data: or https URL"}
		}
		return part{FileData: &fileData{FileURI: raw, MimeType: mimeFromName(raw, "image/jpeg")}}, nil
	case strings.HasPrefix(raw, "http://") || strings.HasPrefix(raw, "https://"):
		if isGeminiFileURI(raw) {
			return part{FileData: &fileData{FileURI: raw}}, nil
		}
		mt, data, err := c.download(ctx, raw, "image/")
		if err != nil {
			if ctx.Err() != nil {
				return part{}, provider.ClassifyTransportError(ctx, err)
			}
			return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param, Reason: err.Error()}
		}
		return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
	}
	return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param, Reason: "image URLs must be data:, http or https URLs"}
}

// isGeminiFileURI reports a Files API URI (…/v1beta/files/{id}), which
// Gemini reads itself and the gateway could not download without the key.
func isGeminiFileURI(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host == "generativelanguage.googleapis.com" && strings.Contains(u.Path, "/files/")
}

// download fetches a remote image with the request's context, up to
// maxMediaBytes, and checks that its type starts with wantPrefix (sniffing
// the bytes when the server names no useful type).
func (c *Client) download(ctx context.Context, raw, wantPrefix string) (mimeType, b64 string, err error) {
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return "", "", fmt.Errorf("invalid image URL: %v", err)
	}
	req.Header.Set("Accept", wantPrefix+"*")
	resp, err := c.fetch.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("could not fetch the image: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", "", fmt.Errorf("could not fetch the image: its server answered HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > maxMediaBytes {
		return "", "", fmt.Errorf("the image is larger than %d MB", maxMediaBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMediaBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("could not read the image: %v", err)
	}
	if len(data) > maxMediaBytes {
		return "", "", fmt.Errorf("the image is larger than %d MB", maxMediaBytes>>20)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "" || mt == "application/octet-stream" || mt == "binary/octet-stream" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(data))
	}
	if !strings.HasPrefix(mt, wantPrefix) {
		return "", "", fmt.Errorf("the URL's content type is %q, not an image", mt)
	}
	return mt, base64.StdEncoding.EncodeToString(data), nil
}

// parseDataURL splits data:[<type>][;base64],<data> into a type and
// base64 data (RFC 2397); percent-encoded data is re-encoded as base64.
func parseDataURL(raw string) (mimeType, b64 string, err error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(raw, "data:"), ",")
	if !ok {
		return "", "", fmt.Errorf("malformed data: URL (no comma)")
	}
	isB64 := false
	if m, found := strings.CutSuffix(meta, ";base64"); found {
		meta, isB64 = m, true
	}
	mimeType, _, _ = strings.Cut(meta, ";")
	if !isB64 {
		dec, err := url.PathUnescape(data)
		if err != nil {
			return "", "", fmt.Errorf("malformed data: URL: %v", err)
		}
		data = base64.StdEncoding.EncodeToString([]byte(dec))
	}
	if mimeType == "" {
		dec, _ := base64.StdEncoding.DecodeString(data)
		mimeType, _, _ = mime.ParseMediaType(http.DetectContentType(dec))
	}
	return mimeType, data, nil
}

// filePart maps an OpenAI file part: inline file_data (a data: URL, or bare
// base64 typed by the filename, PDF by default) becomes inlineData; a
// file_id that is a Files API or gs:// URI becomes fileData. Other file ids
// name OpenAI uploads Gemini cannot read.
func (c *Client) filePart(f *llm.FilePart, param string) (part, error) {
	if f.FileData != "" {
		if strings.HasPrefix(f.FileData, "data:") {
			mt, data, err := parseDataURL(f.FileData)
			if err != nil {
				return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param + ".file_data", Reason: err.Error()}
			}
			return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
		}
		return part{InlineData: &blob{MimeType: mimeFromName(f.Filename, "application/pdf"), Data: f.FileData}}, nil
	}
	id := f.FileID
	switch {
	case strings.HasPrefix(id, "gs://") && c.vertex,
		strings.HasPrefix(id, "https://") && (c.vertex || isGeminiFileURI(id)):
		return part{FileData: &fileData{FileURI: id, MimeType: mimeFromName(id, "")}}, nil
	case strings.HasPrefix(id, "files/") && !c.vertex:
		return part{FileData: &fileData{FileURI: DefaultGeminiBaseURL + "/" + id}}, nil
	}
	return part{}, &provider.UnsupportedParameterError{Provider: c.name, Param: param + ".file_id",
		Reason: "only Gemini Files API URIs (and gs:// URIs on Vertex) can be referenced; send file_data instead"}
}

// mimeFromName guesses a media type from a file name's extension.
func mimeFromName(name, fallback string) string {
	if mt := mime.TypeByExtension(strings.ToLower(path.Ext(name))); mt != "" {
		mt, _, _ = mime.ParseMediaType(mt)
		return mt
	}
	return fallback
}

// audioMime maps input_audio.format to a media type Gemini accepts.
func audioMime(format string) string {
	switch format {
	case "mp3":
		return "audio/mp3"
	case "wav", "":
		return "audio/wav"
	}
	return "audio/" + format
}
