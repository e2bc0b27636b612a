import llm Fast from "openai://gpt-4.1-mini"
import llm Careful from "anthropic://claude-sonnet-4-0"

main agent A {
    model Fsat

    main func(input) {
        model Nope
        return input
    }
}
