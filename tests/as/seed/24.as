// Seed 002, example 24: the imports and the function, in an agent with a model.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import file Requirements from "./requirements.md"
import file Config from "./config.json"

main agent Example {
    model Qwen

    func answer(input) {
        use Requirements < 4k
        use Config
        return generate({ input: "Answer from the referenced file." }) {
            return {
                ok boolean
                answer string
            }
        }
    }
}
