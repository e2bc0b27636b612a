// Reflect and improve: draft, critique, and try again until the critic is satisfied (at most
// three rounds), recalling the lessons of earlier runs and recording a new one.
//
//   keyless-host as run examples/reflect.as --input '{"goal": "a one-line commit message"}' --mock answers.json
import llm Writer from "anthropic://claude-sonnet-4-0"
import memory Lessons from "file://./.agentscript/lessons.jsonl"

main agent Reflector {
    model Writer
    role "Writer"

    main func(input {
        goal string
    }) {
        past = Lessons.query({ kind: "lesson", limit: 5 })
        use past < 2k
        use input.goal
        draft = generate({ input: "Write it." }) {
            return {
                text string
            }
        }
        good = false
        loop until good < 3 {
            critique = critic({ goal: input.goal, draft: draft.text })
            good = critique.ok
            if not good {
                use critique.advice
                draft = generate({ input: "Improve the draft with the advice." }) {
                    return {
                        text string
                    }
                }
            }
        }
        lesson = generate({ input: "In one sentence, what should the next attempt remember?" }) {
            return {
                insight string
            }
        }
        Lessons.add({ kind: "lesson", text: lesson.insight, goal: input.goal })
        return { text: draft.text, accepted: good }
    }

    func critic(input {
        goal string
        draft string
    }) {
        role "Critic"
        use input.goal
        use input.draft
        return generate({
            input: "Does the draft meet the goal? If not, give one piece of advice."
        }) {
            return {
                ok boolean
                advice string
            }
        }
    }
}
