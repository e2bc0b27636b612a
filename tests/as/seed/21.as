// Seed 002, example 21: a fragment, with the tool import.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool Env from "env://process"

main agent Example {
    model Qwen

    main func(input) {
        home = Env.get({ name: "HOME" })

        return home
    }
}
