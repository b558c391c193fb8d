package presets_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmproxy/llmproxy/presets"
)

func Example() {
	weather, err := presets.Weather.Success(
		presets.WeatherArgs{Location: "Paris", Unit: presets.Celsius},
		presets.WeatherResult{Location: "Paris", Temperature: 21, Unit: presets.Celsius, Condition: "sunny"},
		presets.WithID("call_paris"), presets.WithDelay(20*time.Millisecond),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(weather.Call.ID, weather.Call.Name, string(weather.Call.Arguments))
	fmt.Println(string(weather.Result.Content), weather.Delay)

	failure, _ := presets.Weather.Failure(
		presets.WeatherArgs{Location: "Paris"},
		presets.ToolError{Code: "unavailable", Message: "scripted failure", Retryable: true},
	)
	fmt.Println(failure.Result.CallID, failure.Result.IsError, string(failure.Result.Content))

	_, err = presets.WebSearch.Call(presets.WebSearchArgs{Query: "go", Limit: new(0)}, "")
	fmt.Println(err, errors.Is(err, presets.ErrInvalidArguments))

	// Output:
	// call_paris weather {"location":"Paris","unit":"celsius"}
	// {"condition":"sunny","location":"Paris","temperature":21,"unit":"celsius"} 20ms
	// call_weather true {"error":{"code":"unavailable","message":"scripted failure","retryable":true}}
	// presets: web_search arguments: /limit: must be >= 1 (minimum) true
}

func ExampleDescriptor_ValidateArguments() {
	d, _ := presets.Lookup("read_file")
	err := d.ValidateArguments([]byte(`{"path":"notes.txt","offset":-1,"mode":"rw"}`))
	fmt.Println(err)

	// Output:
	// presets: read_file arguments: /mode: unknown property (additionalProperties); /offset: must be >= 0 (minimum)
}
