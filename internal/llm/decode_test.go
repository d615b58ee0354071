package llm

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// body builds a valid request with extra top-level members appended, so a
// table row shows only the field it is about.
func body(extra string) string {
	b := `{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hi"}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// msgs builds a valid request whose messages array is given.
func msgs(messages string) string {
	return `{"model":"gpt-4.1-mini","messages":` + messages + `}`
}

// tools returns a tools array of n valid function tools.
func tools(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"type":"function","function":{"name":"f` + strconv.Itoa(i) + `"}}`
	}
	return "[" + strings.Join(items, ",") + "]"
}

// functions returns a functions array of n valid definitions.
func functions(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"name":"f` + strconv.Itoa(i) + `"}`
	}
	return "[" + strings.Join(items, ",") + "]"
}

func TestDecodeChatRequestBounds(t *testing.T) {
	name64 := strings.Repeat("a", 64)
	name65 := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		body  string
		code  string // "" means accepted
		param string
	}{
		// Body shape.
		{"empty body", ``, CodeInvalidJSON, ""},
		{"whitespace body", " \n\t", CodeInvalidJSON, ""},
		{"array body", `[]`, CodeInvalidJSON, ""},
		{"null body", `null`, CodeInvalidJSON, ""},
		{"string body", `"hi"`, CodeInvalidJSON, ""},
		{"truncated", `{"model":`, CodeInvalidJSON, ""},
		{"not json", `hello`, CodeInvalidJSON, ""},
		{"trailing garbage", body("") + " x", CodeInvalidJSON, ""},
		{"minimal valid", body(""), "", ""},

		// model.
		{"model missing", `{"messages":[{"role":"user","content":"hi"}]}`, CodeMissingRequired, "model"},
		{"model empty", `{"model":"","messages":[{"role":"user","content":"hi"}]}`, CodeMissingRequired, "model"},
		{"model null", `{"model":null,"messages":[{"role":"user","content":"hi"}]}`, CodeMissingRequired, "model"},
		{"model number", `{"model":5,"messages":[{"role":"user","content":"hi"}]}`, CodeInvalidType, "model"},

		// messages.
		{"messages missing", `{"model":"m"}`, CodeMissingRequired, "messages"},
		{"messages null", msgs(`null`), CodeMissingRequired, "messages"},
		{"messages empty", msgs(`[]`), CodeInvalidValue, "messages"},
		{"messages string", msgs(`"hi"`), CodeInvalidType, "messages"},
		{"message number", msgs(`[1]`), CodeInvalidType, "messages[0]"},
		{"message null", msgs(`[null]`), CodeInvalidType, "messages[0]"},
		{"message empty object", msgs(`[{}]`), CodeMissingRequired, "messages[0].role"},
		{"role number", msgs(`[{"role":5,"content":"hi"}]`), CodeInvalidType, "messages[0].role"},
		{"role unknown", msgs(`[{"role":"bogus","content":"hi"}]`), CodeInvalidValue, "messages[0].role"},
		{"second message bad", msgs(`[{"role":"user","content":"hi"},{"role":"robot","content":"hi"}]`), CodeInvalidValue, "messages[1].role"},
		{"system", msgs(`[{"role":"system","content":"be terse"}]`), "", ""},
		{"developer", msgs(`[{"role":"developer","content":[{"type":"text","text":"be terse"}]}]`), "", ""},
		{"user name", msgs(`[{"role":"user","name":"ann","content":"hi"}]`), "", ""},
		{"user empty string", msgs(`[{"role":"user","content":""}]`), "", ""},
		{"user content null", msgs(`[{"role":"user","content":null}]`), CodeMissingRequired, "messages[0].content"},
		{"user content missing", msgs(`[{"role":"user"}]`), CodeMissingRequired, "messages[0].content"},
		{"system content missing", msgs(`[{"role":"system"}]`), CodeMissingRequired, "messages[0].content"},
		{"user content number", msgs(`[{"role":"user","content":5}]`), CodeInvalidType, "messages[0].content"},
		{"user content object", msgs(`[{"role":"user","content":{"type":"text"}}]`), CodeInvalidType, "messages[0].content"},
		{"user content empty array", msgs(`[{"role":"user","content":[]}]`), CodeInvalidValue, "messages[0].content"},
		{"part number", msgs(`[{"role":"user","content":[5]}]`), CodeInvalidType, "messages[0].content[0]"},
		{"part null", msgs(`[{"role":"user","content":[{"type":"text","text":"a"},null]}]`), CodeInvalidType, "messages[0].content[1]"},
		{"part type missing", msgs(`[{"role":"user","content":[{"text":"a"}]}]`), CodeMissingRequired, "messages[0].content[0].type"},
		{"part text number", msgs(`[{"role":"user","content":[{"type":"text","text":5}]}]`), CodeInvalidType, "messages[0].content[0].text"},
		{"image part", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]}]`), "", ""},
		{"image part data url", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]`), "", ""},
		{"image part no image_url", msgs(`[{"role":"user","content":[{"type":"image_url"}]}]`), CodeMissingRequired, "messages[0].content[0].image_url"},
		{"image part empty url", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]`), CodeMissingRequired, "messages[0].content[0].image_url.url"},
		{"image part url string", msgs(`[{"role":"user","content":[{"type":"image_url","image_url":"https://x"}]}]`), CodeInvalidType, "messages[0].content[0].image_url"},
		{"audio part", msgs(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]`), "", ""},
		{"audio part no data", msgs(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"format":"wav"}}]}]`), CodeMissingRequired, "messages[0].content[0].input_audio.data"},
		{"audio part no format", msgs(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA"}}]}]`), CodeMissingRequired, "messages[0].content[0].input_audio.format"},
		{"file part id", msgs(`[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]`), "", ""},
		{"file part data", msgs(`[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,AA==","filename":"a.pdf"}}]}]`), "", ""},
		{"file part empty", msgs(`[{"role":"user","content":[{"type":"file","file":{}}]}]`), CodeMissingRequired, "messages[0].content[0].file"},
		{"unknown part kept", msgs(`[{"role":"user","content":[{"type":"input_video","video":{"url":"x"}}]}]`), "", ""},
		{"image in system", msgs(`[{"role":"system","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x"}}]}]`), CodeInvalidValue, "messages[0].content[1].type"},
		{"image in tool", msgs(`[{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]`), CodeInvalidValue, "messages[0].content[0].type"},
		{"refusal part in assistant", msgs(`[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`), "", ""},
		{"refusal part in user", msgs(`[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]`), CodeInvalidValue, "messages[0].content[0].type"},
		{"assistant tool calls null content", msgs(`[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}]`), "", ""},
		{"assistant function_call null content", msgs(`[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]`), "", ""},
		{"assistant refusal null content", msgs(`[{"role":"assistant","content":null,"refusal":"I can't"}]`), "", ""},
		{"assistant null content alone", msgs(`[{"role":"assistant","content":null}]`), CodeMissingRequired, "messages[0].content"},
		{"assistant reasoning", msgs(`[{"role":"assistant","content":"4","reasoning_content":"2+2"},{"role":"assistant","content":"4","reasoning":"2+2"}]`), "", ""},
		{"assistant reasoning number", msgs(`[{"role":"assistant","content":"4","reasoning":5}]`), CodeInvalidType, "messages[0].reasoning"},
		{"tool call id missing", msgs(`[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`), CodeMissingRequired, "messages[0].tool_calls[0].id"},
		{"tool call null", msgs(`[{"role":"assistant","tool_calls":[null]}]`), CodeInvalidType, "messages[0].tool_calls[0]"},
		{"tool call type custom", msgs(`[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","function":{"name":"f","arguments":"{}"}}]}]`), CodeInvalidValue, "messages[0].tool_calls[0].type"},
		{"tool call name missing", msgs(`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]`), CodeMissingRequired, "messages[0].tool_calls[0].function.name"},
		{"tool call arguments object", msgs(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]`), CodeInvalidType, "messages[1].tool_calls[0].function.arguments"},
		{"tool calls object", msgs(`[{"role":"assistant","tool_calls":{}}]`), CodeInvalidType, "messages[0].tool_calls"},
		{"tool message", msgs(`[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"ok"}]}]`), "", ""},
		{"tool message no id", msgs(`[{"role":"tool","content":"ok"}]`), CodeMissingRequired, "messages[0].tool_call_id"},
		{"tool message no content", msgs(`[{"role":"tool","tool_call_id":"c"}]`), CodeMissingRequired, "messages[0].content"},
		{"function message", msgs(`[{"role":"function","name":"f","content":null}]`), "", ""},
		{"function message no name", msgs(`[{"role":"function","content":"x"}]`), CodeMissingRequired, "messages[0].name"},
		{"function message array", msgs(`[{"role":"function","name":"f","content":[{"type":"text","text":"x"}]}]`), CodeInvalidType, "messages[0].content"},
		{"message function_call no name", msgs(`[{"role":"assistant","function_call":{"arguments":"{}"}}]`), CodeMissingRequired, "messages[0].function_call.name"},

		// frequency_penalty and presence_penalty.
		{"frequency_penalty min", body(`"frequency_penalty":-2`), "", ""},
		{"frequency_penalty max", body(`"frequency_penalty":2`), "", ""},
		{"frequency_penalty below", body(`"frequency_penalty":-2.01`), CodeInvalidValue, "frequency_penalty"},
		{"frequency_penalty above", body(`"frequency_penalty":2.01`), CodeInvalidValue, "frequency_penalty"},
		{"frequency_penalty string", body(`"frequency_penalty":"1"`), CodeInvalidType, "frequency_penalty"},
		{"frequency_penalty null", body(`"frequency_penalty":null`), "", ""},
		{"presence_penalty min", body(`"presence_penalty":-2`), "", ""},
		{"presence_penalty max", body(`"presence_penalty":2`), "", ""},
		{"presence_penalty below", body(`"presence_penalty":-2.5`), CodeInvalidValue, "presence_penalty"},
		{"presence_penalty above", body(`"presence_penalty":3`), CodeInvalidValue, "presence_penalty"},

		// logit_bias.
		{"logit_bias edges", body(`"logit_bias":{"50256":-100,"1":100,"0":0}`), "", ""},
		{"logit_bias null", body(`"logit_bias":null`), "", ""},
		{"logit_bias above", body(`"logit_bias":{"50256":101}`), CodeInvalidValue, "logit_bias.50256"},
		{"logit_bias below", body(`"logit_bias":{"50256":-101}`), CodeInvalidValue, "logit_bias.50256"},
		{"logit_bias smallest bad key reported", body(`"logit_bias":{"9":500,"10":500,"2":1}`), CodeInvalidValue, "logit_bias.10"},
		{"logit_bias key not digits", body(`"logit_bias":{"abc":1}`), CodeInvalidValue, "logit_bias"},
		{"logit_bias key empty", body(`"logit_bias":{"":1}`), CodeInvalidValue, "logit_bias"},
		{"logit_bias fraction", body(`"logit_bias":{"50256":1.5}`), CodeInvalidType, "logit_bias.50256"},
		{"logit_bias string value", body(`"logit_bias":{"50256":"1"}`), CodeInvalidType, "logit_bias.50256"},
		{"logit_bias huge", body(`"logit_bias":{"50256":99999999999999999999}`), CodeInvalidValue, "logit_bias.50256"},
		{"logit_bias array", body(`"logit_bias":[1]`), CodeInvalidType, "logit_bias"},

		// logprobs and top_logprobs.
		{"logprobs string", body(`"logprobs":"yes"`), CodeInvalidType, "logprobs"},
		{"top_logprobs min", body(`"logprobs":true,"top_logprobs":0`), "", ""},
		{"top_logprobs max", body(`"logprobs":true,"top_logprobs":20`), "", ""},
		{"top_logprobs above", body(`"logprobs":true,"top_logprobs":21`), CodeInvalidValue, "top_logprobs"},
		{"top_logprobs below", body(`"logprobs":true,"top_logprobs":-1`), CodeInvalidValue, "top_logprobs"},
		{"top_logprobs without logprobs", body(`"top_logprobs":5`), CodeInvalidValue, "top_logprobs"},
		{"top_logprobs with logprobs false", body(`"logprobs":false,"top_logprobs":5`), CodeInvalidValue, "top_logprobs"},
		{"top_logprobs null", body(`"top_logprobs":null`), "", ""},
		{"top_logprobs fraction", body(`"logprobs":true,"top_logprobs":1.5`), CodeInvalidType, "top_logprobs"},

		// max_tokens and max_completion_tokens.
		{"max_tokens min", body(`"max_tokens":1`), "", ""},
		{"max_tokens zero", body(`"max_tokens":0`), CodeInvalidValue, "max_tokens"},
		{"max_tokens negative", body(`"max_tokens":-5`), CodeInvalidValue, "max_tokens"},
		{"max_tokens fraction", body(`"max_tokens":1.5`), CodeInvalidType, "max_tokens"},
		{"max_tokens string", body(`"max_tokens":"10"`), CodeInvalidType, "max_tokens"},
		{"max_tokens exponent", body(`"max_tokens":1e3`), CodeInvalidType, "max_tokens"},
		{"max_tokens overflow", body(`"max_tokens":99999999999999999999`), CodeInvalidValue, "max_tokens"},
		{"max_completion_tokens min", body(`"max_completion_tokens":1`), "", ""},
		{"max_completion_tokens zero", body(`"max_completion_tokens":0`), CodeInvalidValue, "max_completion_tokens"},

		// n.
		{"n min", body(`"n":1`), "", ""},
		{"n max", body(`"n":128`), "", ""},
		{"n zero", body(`"n":0`), CodeInvalidValue, "n"},
		{"n above", body(`"n":129`), CodeInvalidValue, "n"},
		{"n fraction", body(`"n":1.5`), CodeInvalidType, "n"},
		{"n null", body(`"n":null`), "", ""},

		// response_format.
		{"response_format text", body(`"response_format":{"type":"text"}`), "", ""},
		{"response_format json_object", body(`"response_format":{"type":"json_object"}`), "", ""},
		{"response_format json_schema", body(`"response_format":{"type":"json_schema","json_schema":{"name":"answer","description":"d","schema":{"type":"object"},"strict":true}}`), "", ""},
		{"response_format json_schema strict null", body(`"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":null}}`), "", ""},
		{"response_format name 64", body(`"response_format":{"type":"json_schema","json_schema":{"name":"` + name64 + `"}}`), "", ""},
		{"response_format name 65", body(`"response_format":{"type":"json_schema","json_schema":{"name":"` + name65 + `"}}`), CodeInvalidValue, "response_format.json_schema.name"},
		{"response_format name bad chars", body(`"response_format":{"type":"json_schema","json_schema":{"name":"my schema"}}`), CodeInvalidValue, "response_format.json_schema.name"},
		{"response_format name missing", body(`"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), CodeMissingRequired, "response_format.json_schema.name"},
		{"response_format json_schema missing", body(`"response_format":{"type":"json_schema"}`), CodeMissingRequired, "response_format.json_schema"},
		{"response_format schema array", body(`"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":[]}}`), CodeInvalidType, "response_format.json_schema.schema"},
		{"response_format strict string", body(`"response_format":{"type":"json_schema","json_schema":{"name":"a","strict":"yes"}}`), CodeInvalidType, "response_format.json_schema.strict"},
		{"response_format type unknown", body(`"response_format":{"type":"xml"}`), CodeInvalidValue, "response_format.type"},
		{"response_format type missing", body(`"response_format":{}`), CodeMissingRequired, "response_format.type"},
		{"response_format string", body(`"response_format":"json"`), CodeInvalidType, "response_format"},
		{"response_format null", body(`"response_format":null`), "", ""},

		// seed: the int64 range, decoded without float rounding.
		{"seed max", body(`"seed":9223372036854775807`), "", ""},
		{"seed min", body(`"seed":-9223372036854775808`), "", ""},
		{"seed above", body(`"seed":9223372036854775808`), CodeInvalidValue, "seed"},
		{"seed below", body(`"seed":-9223372036854775809`), CodeInvalidValue, "seed"},
		{"seed spec bound", body(`"seed":9223372036854776000`), CodeInvalidValue, "seed"},
		{"seed fraction", body(`"seed":1.5`), CodeInvalidType, "seed"},
		{"seed string", body(`"seed":"1"`), CodeInvalidType, "seed"},

		// stop.
		{"stop string", body(`"stop":"END"`), "", ""},
		{"stop one", body(`"stop":["a"]`), "", ""},
		{"stop four", body(`"stop":["a","b","c","d"]`), "", ""},
		{"stop five", body(`"stop":["a","b","c","d","e"]`), CodeInvalidValue, "stop"},
		{"stop empty array", body(`"stop":[]`), CodeInvalidValue, "stop"},
		{"stop null", body(`"stop":null`), "", ""},
		{"stop number", body(`"stop":5`), CodeInvalidType, "stop"},
		{"stop item number", body(`"stop":["a",5]`), CodeInvalidType, "stop[1]"},

		// stream and stream_options.
		{"stream true", body(`"stream":true`), "", ""},
		{"stream null", body(`"stream":null`), "", ""},
		{"stream string", body(`"stream":"true"`), CodeInvalidType, "stream"},
		{"stream_options", body(`"stream":true,"stream_options":{"include_usage":true}`), "", ""},
		{"stream_options null", body(`"stream_options":null`), "", ""},
		{"stream_options string", body(`"stream_options":"usage"`), CodeInvalidType, "stream_options"},
		{"stream_options include_usage string", body(`"stream_options":{"include_usage":"yes"}`), CodeInvalidType, "stream_options.include_usage"},

		// thinking.
		{"thinking enabled min budget", body(`"thinking":{"type":"enabled","budget_tokens":1}`), "", ""},
		{"thinking disabled", body(`"thinking":{"type":"disabled"}`), "", ""},
		{"thinking null", body(`"thinking":null`), "", ""},
		{"thinking budget zero", body(`"thinking":{"type":"enabled","budget_tokens":0}`), CodeInvalidValue, "thinking.budget_tokens"},
		{"thinking type missing", body(`"thinking":{"budget_tokens":10}`), CodeMissingRequired, "thinking.type"},
		{"thinking type unknown", body(`"thinking":{"type":"on"}`), CodeInvalidValue, "thinking.type"},
		{"thinking string", body(`"thinking":"enabled"`), CodeInvalidType, "thinking"},
		{"thinking budget string", body(`"thinking":{"type":"enabled","budget_tokens":"1"}`), CodeInvalidType, "thinking.budget_tokens"},

		// temperature and top_p.
		{"temperature min", body(`"temperature":0`), "", ""},
		{"temperature max", body(`"temperature":2`), "", ""},
		{"temperature below", body(`"temperature":-0.1`), CodeInvalidValue, "temperature"},
		{"temperature above", body(`"temperature":2.1`), CodeInvalidValue, "temperature"},
		{"temperature string", body(`"temperature":"hot"`), CodeInvalidType, "temperature"},
		{"temperature overflow", body(`"temperature":1e400`), CodeInvalidValue, "temperature"},
		{"temperature null", body(`"temperature":null`), "", ""},
		{"top_p min", body(`"top_p":0`), "", ""},
		{"top_p max", body(`"top_p":1`), "", ""},
		{"top_p above", body(`"top_p":1.01`), CodeInvalidValue, "top_p"},
		{"top_p below", body(`"top_p":-0.01`), CodeInvalidValue, "top_p"},

		// tools.
		{"tools max", body(`"tools":` + tools(128)), "", ""},
		{"tools above", body(`"tools":` + tools(129)), CodeInvalidValue, "tools"},
		{"tools empty", body(`"tools":[]`), "", ""},
		{"tools string", body(`"tools":"f"`), CodeInvalidType, "tools"},
		{"tool null", body(`"tools":[null]`), CodeInvalidType, "tools[0]"},
		{"tool type missing", body(`"tools":[{"function":{"name":"f"}}]`), CodeMissingRequired, "tools[0].type"},
		{"tool type custom", body(`"tools":[{"type":"custom","custom":{"name":"f"}}]`), CodeInvalidValue, "tools[0].type"},
		{"tool name missing", body(`"tools":[{"type":"function","function":{}}]`), CodeMissingRequired, "tools[0].function.name"},
		{"tool function missing", body(`"tools":[{"type":"function"}]`), CodeMissingRequired, "tools[0].function.name"},
		{"tool name 64", body(`"tools":[{"type":"function","function":{"name":"` + name64 + `"}}]`), "", ""},
		{"tool name 65", body(`"tools":[{"type":"function","function":{"name":"` + name65 + `"}}]`), CodeInvalidValue, "tools[0].function.name"},
		{"tool name space", body(`"tools":[{"type":"function","function":{"name":"get weather"}}]`), CodeInvalidValue, "tools[0].function.name"},
		{"tool name dash underscore", body(`"tools":[{"type":"function","function":{"name":"get-weather_v2"}}]`), "", ""},
		{"tool second bad", body(`"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b.c"}}]`), CodeInvalidValue, "tools[1].function.name"},
		{"tool parameters array", body(`"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]`), CodeInvalidType, "tools[0].function.parameters"},
		{"tool parameters null", body(`"tools":[{"type":"function","function":{"name":"f","parameters":null}}]`), "", ""},
		{"tool strict string", body(`"tools":[{"type":"function","function":{"name":"f","strict":"yes"}}]`), CodeInvalidType, "tools[0].function.strict"},
		{"tool description number", body(`"tools":[{"type":"function","function":{"name":"f","description":5}}]`), CodeInvalidType, "tools[0].function.description"},

		// tool_choice.
		{"tool_choice none", body(`"tool_choice":"none"`), "", ""},
		{"tool_choice auto", body(`"tools":` + tools(1) + `,"tool_choice":"auto"`), "", ""},
		{"tool_choice required", body(`"tools":` + tools(1) + `,"tool_choice":"required"`), "", ""},
		{"tool_choice null", body(`"tool_choice":null`), "", ""},
		{"tool_choice unknown string", body(`"tool_choice":"any"`), CodeInvalidValue, "tool_choice"},
		{"tool_choice empty string", body(`"tool_choice":""`), CodeInvalidValue, "tool_choice"},
		{"tool_choice number", body(`"tool_choice":5`), CodeInvalidType, "tool_choice"},
		{"tool_choice named", body(`"tools":` + tools(2) + `,"tool_choice":{"type":"function","function":{"name":"f1"}}`), "", ""},
		{"tool_choice named unknown tool", body(`"tools":` + tools(2) + `,"tool_choice":{"type":"function","function":{"name":"nope"}}`), CodeInvalidValue, "tool_choice.function.name"},
		{"tool_choice named without tools", body(`"tool_choice":{"type":"function","function":{"name":"f0"}}`), CodeInvalidValue, "tool_choice.function.name"},
		{"tool_choice named bad name", body(`"tools":` + tools(1) + `,"tool_choice":{"type":"function","function":{"name":"a b"}}`), CodeInvalidValue, "tool_choice.function.name"},
		{"tool_choice named no function", body(`"tools":` + tools(1) + `,"tool_choice":{"type":"function"}`), CodeMissingRequired, "tool_choice.function.name"},
		{"tool_choice named name number", body(`"tool_choice":{"type":"function","function":{"name":5}}`), CodeInvalidType, "tool_choice.function.name"},
		{"tool_choice empty object", body(`"tool_choice":{}`), CodeMissingRequired, "tool_choice.type"},
		{"tool_choice custom", body(`"tool_choice":{"type":"custom","custom":{"name":"f"}}`), CodeInvalidValue, "tool_choice.type"},
		{"tool_choice allowed_tools", body(`"tools":` + tools(1) + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f0"}}]}}`), "", ""},
		{"tool_choice allowed_tools missing", body(`"tool_choice":{"type":"allowed_tools"}`), CodeMissingRequired, "tool_choice.allowed_tools"},
		{"tool_choice allowed_tools array", body(`"tool_choice":{"type":"allowed_tools","allowed_tools":[]}`), CodeInvalidType, "tool_choice.allowed_tools"},

		// parallel_tool_calls and user.
		{"parallel_tool_calls false", body(`"parallel_tool_calls":false`), "", ""},
		{"parallel_tool_calls string", body(`"parallel_tool_calls":"no"`), CodeInvalidType, "parallel_tool_calls"},
		{"user", body(`"user":"u-1"`), "", ""},
		{"user number", body(`"user":5`), CodeInvalidType, "user"},

		// functions and function_call (deprecated).
		{"functions one", body(`"functions":` + functions(1)), "", ""},
		{"functions max", body(`"functions":` + functions(128)), "", ""},
		{"functions empty", body(`"functions":[]`), CodeInvalidValue, "functions"},
		{"functions above", body(`"functions":` + functions(129)), CodeInvalidValue, "functions"},
		{"functions null", body(`"functions":null`), "", ""},
		{"function null", body(`"functions":[null]`), CodeInvalidType, "functions[0]"},
		{"function name missing", body(`"functions":[{"description":"d"}]`), CodeMissingRequired, "functions[0].name"},
		{"function name bad", body(`"functions":[{"name":"a/b"}]`), CodeInvalidValue, "functions[0].name"},
		{"function parameters string", body(`"functions":[{"name":"f","parameters":"{}"}]`), CodeInvalidType, "functions[0].parameters"},
		{"function_call none", body(`"function_call":"none"`), "", ""},
		{"function_call auto", body(`"functions":` + functions(1) + `,"function_call":"auto"`), "", ""},
		{"function_call named", body(`"functions":` + functions(2) + `,"function_call":{"name":"f1"}`), "", ""},
		{"function_call unknown string", body(`"function_call":"required"`), CodeInvalidValue, "function_call"},
		{"function_call empty string", body(`"function_call":""`), CodeInvalidValue, "function_call"},
		{"function_call named unknown", body(`"functions":` + functions(1) + `,"function_call":{"name":"g"}`), CodeInvalidValue, "function_call.name"},
		{"function_call no name", body(`"function_call":{}`), CodeMissingRequired, "function_call.name"},
		{"function_call number", body(`"function_call":5`), CodeInvalidType, "function_call"},

		// Other OpenAI fields: typed where typed, objects where objects.
		{"other fields", body(`"reasoning_effort":"low","metadata":{"k":"v"},"store":true,"service_tier":"flex","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"prediction":{"type":"content","content":"x"},"prompt_cache_key":"k","prompt_cache_retention":"24h","safety_identifier":"s","verbosity":"low","web_search_options":{},"moderation":null`), "", ""},
		{"metadata number value", body(`"metadata":{"k":1}`), CodeInvalidType, "metadata.k"},
		{"modalities string", body(`"modalities":"text"`), CodeInvalidType, "modalities"},
		{"audio string", body(`"audio":"alloy"`), CodeInvalidType, "audio"},
		{"prediction array", body(`"prediction":[]`), CodeInvalidType, "prediction"},
		{"web_search_options string", body(`"web_search_options":"on"`), CodeInvalidType, "web_search_options"},
		{"reasoning_effort number", body(`"reasoning_effort":1`), CodeInvalidType, "reasoning_effort"},

		// Which error wins.
		{"field order beats document order", body(`"temperature":"x","n":"y"`), CodeInvalidType, "n"},
		{"type errors before bounds", body(`"n":0,"temperature":"x"`), CodeInvalidType, "temperature"},
		{"model checked first", `{"messages":[],"temperature":5}`, CodeMissingRequired, "model"},
		{"duplicate key bad first", body(`"temperature":"x","temperature":1`), CodeInvalidType, "temperature"},
		{"escaped key", `{"mod\u0065l":"m","messages":[{"role":"user","content":"hi"}]}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeChatRequest([]byte(tt.body))
			if tt.code == "" {
				if err != nil {
					t.Fatalf("rejected a valid body: %v", err)
				}
				if req == nil {
					t.Fatal("nil request without error")
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error with code %s", err, err, tt.code)
			}
			got := struct{ Code, Param string }{e.Code, e.Param}
			want := struct{ Code, Param string }{tt.code, tt.param}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\nmessage: %s", diff, e.Message)
			}
			if e.Param != "" && !strings.HasPrefix(e.Message, e.Param+": ") {
				t.Errorf("message %q does not start with param %q", e.Message, e.Param)
			}
			if req != nil {
				t.Errorf("request returned with an error")
			}
		})
	}
}

func TestDecodeChatRequestMessages(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"number bound", body(`"temperature":5`), "temperature: must be between 0 and 2, got 5"},
		{"wrong type", body(`"temperature":"hot"`), "temperature: must be a number, got string"},
		{"non-integer", body(`"n":1.5`), "n: must be an integer, got 1.5"},
		{"long value truncated", msgs(`[{"role":"` + strings.Repeat("x", 10000) + `","content":"hi"}]`),
			`messages[0].role: must be one of system, developer, user, assistant, tool, function, got "` + strings.Repeat("x", 40) + `..."`},
		{"long number truncated", body(`"seed":` + strings.Repeat("9", 500)),
			"seed: must be between -9223372036854775808 and 9223372036854775807, got " + strings.Repeat("9", 40) + "..."},
		{"empty", "", "request body is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeChatRequest([]byte(tt.body))
			if err == nil {
				t.Fatal("accepted")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeChatRequestFields checks that every modelled field lands in its
// typed place, so translators can rely on the struct.
func TestDecodeChatRequestFields(t *testing.T) {
	in := `{
	  "model": "gpt-4.1-mini",
	  "messages": [
	    {"role": "system", "content": "You are terse."},
	    {"role": "user", "name": "ann", "content": [
	      {"type": "text", "text": "What is in this image?", "cache_control": {"type": "ephemeral"}},
	      {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}}
	    ]},
	    {"role": "assistant", "content": null, "reasoning_content": "look first",
	     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
	  ],
	  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get weather",
	    "parameters": {"type": "object"}, "strict": true}}],
	  "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
	  "stop": "END",
	  "seed": 9007199254740993,
	  "temperature": 0.2,
	  "max_completion_tokens": 256,
	  "stream": true,
	  "stream_options": {"include_usage": true},
	  "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": true}},
	  "thinking": {"type": "enabled", "budget_tokens": 1024},
	  "logit_bias": {"50256": -100},
	  "logprobs": true,
	  "top_logprobs": 3,
	  "n": 2,
	  "parallel_tool_calls": false,
	  "user": "u-1",
	  "reasoning_effort": "high",
	  "metadata": {"team": "a"},
	  "audio": null,
	  "web_search_options": {"search_context_size": "low"}
	}`
	got, err := DecodeChatRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	b := func(v bool) *bool { return &v }
	seed := int64(9007199254740993) // 2^53+1: not representable as a float64
	want := &ChatRequest{
		Model: "gpt-4.1-mini",
		Messages: []Message{
			{Role: "system", Content: TextContent("You are terse.")},
			{Role: "user", Name: "ann", Content: PartsContent(
				ContentPart{Type: "text", Text: "What is in this image?", CacheControl: json.RawMessage(`{"type": "ephemeral"}`)},
				ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "https://example.com/a.png", Detail: "high"}},
			)},
			{Role: "assistant", ReasoningContent: "look first", ToolCalls: []ToolCall{
				{ID: "call_1", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			}},
			{Role: "tool", ToolCallID: "call_1", Content: TextContent("sunny")},
		},
		Tools: []Tool{{Type: "function", Function: FunctionDef{
			Name: "get_weather", Description: "Get weather", Parameters: json.RawMessage(`{"type": "object"}`), Strict: b(true),
		}}},
		ToolChoice:          &ToolChoice{Type: "function", Function: &FunctionName{Name: "get_weather"}},
		Stop:                Stop{"END"},
		Seed:                &seed,
		Temperature:         f(0.2),
		MaxCompletionTokens: i(256),
		Stream:              true,
		StreamOptions:       &StreamOptions{IncludeUsage: true},
		ResponseFormat: &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{
			Name: "out", Schema: json.RawMessage(`{"type": "object"}`), Strict: b(true),
		}},
		Thinking:          &Thinking{Type: "enabled", BudgetTokens: i(1024)},
		LogitBias:         map[string]int{"50256": -100},
		Logprobs:          b(true),
		TopLogprobs:       i(3),
		N:                 i(2),
		ParallelToolCalls: b(false),
		User:              "u-1",
		ReasoningEffort:   "high",
		Metadata:          map[string]string{"team": "a"},
		WebSearchOptions:  json.RawMessage(`{"search_context_size": "low"}`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded request mismatch (-want +got):\n%s", diff)
	}
	if !got.IncludeUsage() {
		t.Error("IncludeUsage() = false, want true")
	}
	if n, ok := got.MaxOutputTokens(); n != 256 || !ok {
		t.Errorf("MaxOutputTokens() = %d, %v; want 256, true", n, ok)
	}
	if r := got.Messages[2].ReasoningText(); r != "look first" {
		t.Errorf("ReasoningText() = %q", r)
	}
}

func TestIncludeUsage(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{body(`"stream":true,"stream_options":{"include_usage":true}`), true},
		{body(`"stream":false,"stream_options":{"include_usage":true}`), false},
		{body(`"stream":null,"stream_options":{"include_usage":true}`), false},
		{body(`"stream":true,"stream_options":{"include_usage":false}`), false},
		{body(`"stream":true,"stream_options":null`), false},
		{body(`"stream":true`), false},
	}
	for _, tt := range tests {
		req, err := DecodeChatRequest([]byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if got := req.IncludeUsage(); got != tt.want {
			t.Errorf("%s: IncludeUsage() = %v, want %v", tt.body, got, tt.want)
		}
	}
}

// TestDecodeChatRequestUnknownFields checks that fields this package does
// not model, at any level, are accepted: the gateway forwards the original
// bytes, so they are the provider's to judge.
func TestDecodeChatRequestUnknownFields(t *testing.T) {
	in := `{"model":"m","future_field":{"deep":[1,2,{"x":null}]},"x-vendor":"y","temperature":1,
	  "messages":[{"role":"user","content":[{"type":"text","text":"hi","annotations":[1]}],"extra":true}],
	  "tools":[{"type":"function","function":{"name":"f","extra":5},"cache_control":{"type":"ephemeral"}}],
	  "stream_options":{"include_usage":true,"include_obfuscation":false,"future":1},
	  "response_format":{"type":"json_object","extra":[]}}`
	req, err := DecodeChatRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "m" || len(req.Messages) != 1 || req.Messages[0].Content.Parts[0].Text != "hi" {
		t.Errorf("known fields lost: %+v", req)
	}
	if o := req.StreamOptions.IncludeObfuscation; o == nil || *o {
		t.Errorf("include_obfuscation = %v, want false", o)
	}
}

// TestContentRoundTrip checks that content decodes and encodes back to the
// same JSON, including part types this package does not model.
func TestContentRoundTrip(t *testing.T) {
	tests := []string{
		`"plain text"`,
		`"escaped \"quotes\" \u00e9 \n"`,
		`""`,
		`null`,
		`[]`,
		`[{"type":"text","text":""}]`,
		`[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]`,
		`[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]`,
		`[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]`,
		`[{"type":"input_audio","input_audio":{"data":"AAAA","format":"mp3"}}]`,
		`[{"type":"file","file":{"file_id":"file-1"}}]`,
		`[{"type":"file","file":{"file_data":"data:application/pdf;base64,AA==","filename":"a.pdf"}}]`,
		`[{"type":"refusal","refusal":"no"}]`,
		`[{"type":"input_video","video":{"url":"x","fps":2},"extra":[1,null]}]`,
		`[{"type":"text","text":"a"},{"type":"future","x":1},{"type":"image_url","image_url":{"url":"u"}}]`,
	}
	for _, in := range tests {
		var c MessageContent
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Errorf("unmarshal %s: %v", in, err)
			continue
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Errorf("marshal %s: %v", in, err)
			continue
		}
		if diff := cmp.Diff(normalize(t, in), normalize(t, string(out))); diff != "" {
			t.Errorf("round trip of %s (-in +out):\n%s", in, diff)
		}
	}
}

// TestContentKinds checks that string, array and null content stay
// distinguishable after decoding.
func TestContentKinds(t *testing.T) {
	tests := []struct {
		in   string
		want MessageContent
	}{
		{`null`, MessageContent{}},
		{`""`, TextContent("")},
		{`"hi"`, TextContent("hi")},
		{`[]`, PartsContent()},
		{`[{"type":"text","text":"a"},{"type":"x","y":1}]`, PartsContent(
			ContentPart{Type: "text", Text: "a"},
			ContentPart{Type: "x", Raw: json.RawMessage(`{"type":"x","y":1}`)},
		)},
	}
	for _, tt := range tests {
		var got MessageContent
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, diff)
		}
	}
	c := PartsContent(ContentPart{Type: "text", Text: "a"}, ContentPart{Type: "image_url"}, ContentPart{Type: "text", Text: "b"})
	if got := c.JoinText("\n"); got != "a\nb" {
		t.Errorf("JoinText = %q, want %q", got, "a\nb")
	}
}

// TestChoiceRoundTrip checks the string-or-object fields encode back to the
// form they were decoded from.
func TestChoiceRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"tool_choice":"auto","function_call":"none","stop":["a","b"]}`,
		`{"tool_choice":{"type":"function","function":{"name":"f"}},"function_call":{"name":"g"}}`,
		`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`,
	} {
		var v struct {
			ToolChoice   *ToolChoice         `json:"tool_choice,omitempty"`
			FunctionCall *FunctionCallChoice `json:"function_call,omitempty"`
			Stop         Stop                `json:"stop,omitempty"`
		}
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normalize(t, in), normalize(t, string(out))); diff != "" {
			t.Errorf("round trip (-in +out):\n%s", diff)
		}
	}
}

// normalize decodes JSON into generic values so comparisons ignore spacing
// and key order.
func normalize(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("normalize %s: %v", s, err)
	}
	return v
}

// benchBody is a realistic ~1 KB chat request: a system prompt, a short
// conversation with a tool round trip, two tools and common sampling
// parameters.
const benchBody = `{"model":"gpt-4.1-mini","messages":[` +
	`{"role":"system","content":"You are a concise travel assistant. Answer in one or two sentences and use tools when the user asks about live data."},` +
	`{"role":"user","content":"What's the weather in Paris right now, and should I bring an umbrella?"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_7Qx","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_7Qx","content":"{\"temp\":14,\"conditions\":\"light rain\",\"precip_prob\":0.8}"},` +
	`{"role":"user","content":[{"type":"text","text":"Thanks. And tomorrow?"}]}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},` +
	`{"type":"function","function":{"name":"get_forecast","description":"Get the forecast for a city and a day offset","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]},"strict":true}}],` +
	`"tool_choice":"auto","temperature":0.2,"top_p":0.9,"max_tokens":256,"stop":["END"],"stream":true,"stream_options":{"include_usage":true},"user":"user-1234","seed":42}`

func BenchmarkDecodeChatRequest(b *testing.B) {
	data := []byte(benchBody)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeChatRequest(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONUnmarshalOnly is the floor: encoding/json alone into the
// same struct, without validation, for comparison with the benchmark above.
func BenchmarkJSONUnmarshalOnly(b *testing.B) {
	data := []byte(benchBody)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var r ChatRequest
		if err := json.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{
		benchBody,
		body(""),
		msgs(`[{"role":"system","content":"be terse"},{"role":"user","content":"hi"}]`),
		msgs(`[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}]}]`),
		msgs(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"file-1"}},{"type":"input_video","v":1}]}]`),
		msgs(`[{"role":"assistant","content":null,"refusal":"no","reasoning":"r"},{"role":"function","name":"f","content":null}]`),
		body(`"n":2,"logprobs":true,"top_logprobs":5,"logit_bias":{"50256":-100},"seed":-9223372036854775808`),
		body(`"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}`),
		body(`"tools":` + tools(2) + `,"tool_choice":{"type":"function","function":{"name":"f1"}},"parallel_tool_calls":false`),
		body(`"functions":` + functions(2) + `,"function_call":{"name":"f0"}`),
		body(`"thinking":{"type":"enabled","budget_tokens":2048},"max_completion_tokens":4096,"reasoning_effort":"high"`),
		body(`"stop":"END","stream":true,"stream_options":{"include_usage":true},"metadata":{"k":"v"},"audio":{"voice":"alloy"}`),
		body(`"temperature":"x","n":0`),
		`{"model":"m","messages":[null],"tools":[null]}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeChatRequest(data)
		if err != nil {
			checkError(t, req, err)
			return
		}
		checkAccepted(t, req)
		// Encoding an accepted request and decoding it again must be
		// accepted too and stable: translators build bodies from the struct.
		b1, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal accepted request: %v", err)
		}
		req2, err := DecodeChatRequest(b1)
		if err != nil {
			t.Fatalf("re-encoded request rejected: %v\n%s", err, b1)
		}
		b2, err := json.Marshal(req2)
		if err != nil {
			t.Fatal(err)
		}
		if string(b1) != string(b2) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", b1, b2)
		}
	})
}

func checkError(t *testing.T, req *ChatRequest, err error) {
	t.Helper()
	if req != nil {
		t.Fatal("request returned with an error")
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	switch e.Code {
	case CodeInvalidJSON, CodeInvalidType, CodeMissingRequired, CodeInvalidValue:
	default:
		t.Fatalf("unknown code %q (%s)", e.Code, e.Message)
	}
	if e.Message == "" {
		t.Fatal("empty message")
	}
	if e.Param != "" && !strings.HasPrefix(e.Message, e.Param+": ") {
		t.Fatalf("message %q does not start with param %q", e.Message, e.Param)
	}
	if len(e.Message) > 512 {
		t.Fatalf("message is %d bytes: %.100s...", len(e.Message), e.Message)
	}
}

func checkAccepted(t *testing.T, r *ChatRequest) {
	t.Helper()
	inRange := func(name string, v *float64, lo, hi float64) {
		if v != nil && (*v < lo || *v > hi) {
			t.Fatalf("%s = %v accepted", name, *v)
		}
	}
	intRange := func(name string, v *int, lo, hi int) {
		if v != nil && (*v < lo || *v > hi) {
			t.Fatalf("%s = %v accepted", name, *v)
		}
	}
	if r.Model == "" || len(r.Messages) < 1 {
		t.Fatalf("accepted without model or messages: %+v", r)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleDeveloper, RoleUser, RoleTool:
			if m.Content.IsNull() {
				t.Fatalf("messages[%d] (%s) accepted with null content", i, m.Role)
			}
		case RoleAssistant, RoleFunction:
		default:
			t.Fatalf("messages[%d].role = %q accepted", i, m.Role)
		}
		if m.Content.Kind == ContentParts && len(m.Content.Parts) == 0 {
			t.Fatalf("messages[%d] accepted with empty parts", i)
		}
	}
	intRange("n", r.N, 1, 128)
	intRange("top_logprobs", r.TopLogprobs, 0, 20)
	if r.TopLogprobs != nil && (r.Logprobs == nil || !*r.Logprobs) {
		t.Fatal("top_logprobs accepted without logprobs")
	}
	intRange("max_tokens", r.MaxTokens, 1, int(^uint(0)>>1))
	intRange("max_completion_tokens", r.MaxCompletionTokens, 1, int(^uint(0)>>1))
	inRange("temperature", r.Temperature, 0, 2)
	inRange("top_p", r.TopP, 0, 1)
	inRange("frequency_penalty", r.FrequencyPenalty, -2, 2)
	inRange("presence_penalty", r.PresencePenalty, -2, 2)
	for k, v := range r.LogitBias {
		if !isDigits(k) || v < -100 || v > 100 {
			t.Fatalf("logit_bias[%q] = %d accepted", k, v)
		}
	}
	if r.Stop != nil && (len(r.Stop) < 1 || len(r.Stop) > 4) {
		t.Fatalf("stop with %d items accepted", len(r.Stop))
	}
	if len(r.Tools) > 128 {
		t.Fatalf("%d tools accepted", len(r.Tools))
	}
	for _, tool := range r.Tools {
		if tool.Type != "function" || !validName(tool.Function.Name) {
			t.Fatalf("tool %+v accepted", tool)
		}
	}
	if r.Functions != nil && (len(r.Functions) < 1 || len(r.Functions) > 128) {
		t.Fatalf("%d functions accepted", len(r.Functions))
	}
	if th := r.Thinking; th != nil {
		if th.Type != "enabled" && th.Type != "disabled" || th.BudgetTokens != nil && *th.BudgetTokens < 1 {
			t.Fatalf("thinking %+v accepted", th)
		}
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type == "json_schema" && (rf.JSONSchema == nil || !validName(rf.JSONSchema.Name)) {
		t.Fatalf("response_format %+v accepted", rf)
	}
	if c := r.ToolChoice; c != nil && c.Mode == "" && c.Type == "function" {
		found := false
		for _, tool := range r.Tools {
			found = found || tool.Function.Name == c.Function.Name
		}
		if !found {
			t.Fatalf("tool_choice naming unknown tool %q accepted", c.Function.Name)
		}
	}
	for _, raw := range []json.RawMessage{r.Audio, r.Prediction, r.PromptCacheOptions, r.WebSearchOptions, r.Moderation} {
		if string(raw) == "null" {
			t.Fatal("raw field left as null")
		}
	}
}
