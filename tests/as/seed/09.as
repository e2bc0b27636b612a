// Seed 002, example 09: a fragment, with the file import and the variable it uses.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import file Requirements from "./requirements.md"

main agent Example {
    model Qwen

    main func(input) {
        past_lessons = []
        use input.question
        use Requirements < 4k
        use past_lessons < 2k
    }
}
