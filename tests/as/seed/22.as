// Seed 002, example 22: a fragment, with the tool import.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool Http from "https://api.example.com"

main agent Example {
    model Qwen

    main func(input) {
        response = Http.get({ url: "/api/data", headers: { Authorization: "Bearer ..." }, timeout: 10000 })
        response = Http.post({ url: "/api/submit", body: { key: "value" }, timeout: 10000 })

        return response
    }
}
