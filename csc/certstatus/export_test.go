package certstatus

// FetchWorkers is how many chains a refresh checks at once.
const FetchWorkers = fetchWorkers
