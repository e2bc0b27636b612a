main agent A {
    main func(input) {
        result = inptu.goal
        for step in steps < 3 {
            last = step
        }
        return last
    }
}
